"""``voice connect`` (connect a Twilio or simulator number) and ``voice simulate-inbound`` (a scripted caller
answered by the number's AI agent over the relay, offline). docs/voice.md."""

from __future__ import annotations

import json
import sys
import uuid

import click
from flask import current_app
from flask.cli import AppGroup

from blueprints.voice.models import PROVIDERS
from blueprints.voice.schemas import CallOut, NumberOut
from blueprints.voice.services import calls, numbers
from core.environments import ENVIRONMENTS, LIVE, in_environment
from core.errors import ApiError

voice_cli = AppGroup("voice", help="Voice numbers and calls.")


def _organization_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise click.ClickException(f"--org: not a UUID: {value!r}") from None


@voice_cli.command("connect")
@click.option("--org", "org_id", required=True, help="Organization id.")
@click.option("--number", required=True, help="E.164, e.g. +525512345678.")
@click.option("--provider", type=click.Choice(list(PROVIDERS)), required=True)
@click.option("--account-sid", default=None, help="Twilio account sid (AC…).")
@click.option("--auth-token", default=None, help="Twilio auth token; '-' reads it from standard input.")
@click.option("--agent-id", default=None, help="The AI agent (member id) that answers inbound calls.")
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def connect(
    org_id: str,
    number: str,
    provider: str,
    account_sid: str | None,
    auth_token: str | None,
    agent_id: str | None,
    environment: str,
    as_json: bool,
) -> None:
    """Connect (or update) a voice number. The token is stored encrypted and never shown again; in the
    sandbox every call goes through the simulator."""
    organization_id = _organization_id(org_id)
    if auth_token == "-":
        auth_token = sys.stdin.readline().strip()
    connection = numbers.NumberConnection(
        number=number,
        provider=provider,
        account_sid=account_sid,
        auth_token=auth_token or None,
        agent_id=agent_id,
    )
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    with in_environment(app, environment):
        try:
            record = numbers.connect_number(organization_id, connection)
        except ApiError as error:
            raise click.ClickException(f"{environment}: {error.message}") from None
        result = NumberOut.dump(record, numbers.default_agent(organization_id))
    if as_json:
        click.echo(json.dumps(result))
    else:
        token = "with an auth token" if result["has_auth_token"] else "without an auth token"
        click.echo(
            f"Connected {result['number']} for {organization_id} ({provider}, {token}) in {environment}"
        )


@voice_cli.command("simulate-inbound")
@click.option("--org", "org_id", required=True, help="Organization id.")
@click.option("--number", default=None, help="The organization's number called (default: its first).")
@click.option("--from", "caller", default="+525500000001", show_default=True, help="The caller's number.")
@click.option("--say", "utterances", multiple=True, required=True, help="What the caller says (repeat).")
@click.option("--env", "environment", type=click.Choice(list(ENVIRONMENTS)), default=LIVE, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def simulate_inbound(
    org_id: str,
    number: str | None,
    caller: str,
    utterances: tuple[str, ...],
    environment: str,
    as_json: bool,
) -> None:
    """Play an inbound call on a simulator number (any number in the sandbox): the caller says each
    --say in turn, the number's AI agent answers over the ConversationRelay path, then the caller hangs
    up. The call keeps its transcript, summary and transfer as a real one."""
    # Imported here: the relay brings the AI runtime, which the other voice commands do not need.
    from blueprints.voice.playback import play_inbound

    organization_id = _organization_id(org_id)
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    with in_environment(app, environment):
        found = (
            numbers.find_number(organization_id, numbers.e164(number, "number"))
            if number
            else numbers.first_number(organization_id)
        )
        if found is None:
            raise click.ClickException(f"{environment}: the organization has no such voice number")
        try:
            played = play_inbound(found, caller, list(utterances))
        except ValueError as error:
            raise click.ClickException(f"{environment}: {error}") from None
    with in_environment(app, environment):
        call = calls.get_call(organization_id, str(played.call_id))
        result = {"call": CallOut.dump(call), "answers": played.answers, "handoff_data": played.handoff_data}
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False))
        return
    for line in result["call"]["transcript"]:
        click.echo(f"{line['speaker']:>6}: {line['text']}")
    shown = result["call"]
    click.echo(f"call {played.call_id}: {shown['status']} ({shown['ended_reason'] or 'transferred'})")


COMMANDS = (voice_cli,)
