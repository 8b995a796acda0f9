"""The APPROVED templates of an address: Meta's paged ``/<waba>/message_templates`` through the fake Graph
server, the simulator's own list, and the messaging service's short cache in front of them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from blueprints.channels.meta import MetaProvider
from blueprints.channels.providers import ProviderError
from blueprints.channels.services import get_address
from blueprints.channels.simulator import SimulatorProvider
from blueprints.messaging import services, template_list
from core.errors import ApiError
from tests.conftest import Org
from tests.fakes.fixtures import Channel, Connect
from tests.fakes.meta_graph import WABA_ID, FakeMetaGraph


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    template_list.clear_cache()
    yield
    template_list.clear_cache()


def add_many(meta: FakeMetaGraph, count: int, **options: Any) -> list[dict[str, Any]]:
    return [
        meta.add_template(
            name=f"tpl_{n:03d}",
            components=[{"type": "BODY", "text": f"Body {n} for {{{{name}}}}"}],
            **options,
        )
        for n in range(count)
    ]


def provider_list(app: Flask, channel: Channel) -> list[Any]:
    with app.app_context():
        address = get_address(uuid.UUID(channel.org.id), channel.address)
        assert address is not None
        return MetaProvider.from_config().list_templates(address)


def test_meta_pages_through_every_approved_template(app: Flask, wa: Channel, meta: FakeMetaGraph) -> None:
    approved = add_many(meta, 230)
    meta.add_template(name="still_pending", status="PENDING", components=[{"type": "BODY", "text": "x"}])
    meta.add_template(name="was_rejected", status="REJECTED", components=[{"type": "BODY", "text": "x"}])
    meta.add_template(name="other_waba", waba_id="999000111", components=[{"type": "BODY", "text": "x"}])

    found = provider_list(app, wa)

    assert [t.id for t in found] == [t["id"] for t in approved]  # every page, nothing else, in order
    assert found[7].name == "tpl_007" and found[7].text_of("BODY") == "Body 7 for {{name}}"
    assert found[7].status == "APPROVED" and found[7].parameter_format == "NAMED"
    pages = meta.template_lists()
    assert len(pages) == 3  # 100 + 100 + 30
    assert all(p.path == f"/v23.0/{WABA_ID}/message_templates" for p in pages)
    assert all(p.headers["Authorization"].startswith("Bearer ") for p in pages)
    first, second, third = (p.query for p in pages)
    assert first["status"] == "APPROVED" and first["limit"] == "100" and "after" not in first
    assert set(first["fields"].split(",")) >= {"id", "name", "language", "status", "components"}
    assert second["after"] and third["after"] and second["after"] != third["after"]


def test_meta_list_errors_are_provider_errors(
    app: Flask, org: Org, wa: Channel, meta: FakeMetaGraph, connect: Connect
) -> None:
    # a WABA Meta does not know
    with pytest.raises(ProviderError) as unknown:
        provider_list(app, wa)
    assert unknown.value.code == 100
    # an expired token
    meta.wabas.add(WABA_ID)
    meta.tokens.clear()
    with pytest.raises(ProviderError) as expired:
        provider_list(app, wa)
    assert expired.value.auth_failed
    # a number connected without its WABA id cannot be listed, and Meta is not called
    connect(org, "whatsapp", "106540352249999", "--phone-number", "+525500000002")
    calls = len(meta.received)
    with pytest.raises(ProviderError) as no_waba:
        provider_list(app, Channel(org, "whatsapp", "106540352249999"))
    assert no_waba.value.code == "no_waba_id" and len(meta.received) == calls


def test_meta_retries_a_failing_page_then_goes_on(app: Flask, wa: Channel, meta: FakeMetaGraph) -> None:
    add_many(meta, 5)
    meta.server_errors = 1
    assert len(provider_list(app, wa)) == 5
    assert len(meta.template_lists()) == 2  # the 500, then the page


def test_an_empty_waba_and_instagram_have_no_templates(
    app: Flask, wa: Channel, ig: Channel, meta: FakeMetaGraph
) -> None:
    meta.wabas.add(WABA_ID)
    assert provider_list(app, wa) == []
    assert provider_list(app, ig) == [] and len(meta.template_lists()) == 1  # Instagram: no call


def test_the_simulator_lists_its_approved_templates(app: Flask, org: Org, connect: Connect) -> None:
    connect(org, "whatsapp", "5550001", "--provider", "simulator", token=None)
    connect(org, "messenger", "5550002", "--provider", "simulator", token=None)
    with app.app_context():
        number = get_address(uuid.UUID(org.id), "5550001")
        page = get_address(uuid.UUID(org.id), "5550002")
        assert number is not None and page is not None
        listed = SimulatorProvider().list_templates(number)
        assert {t.id for t in listed} == {"sim_order_confirmation", "sim_welcome"}  # not the PAUSED one
        assert all(t.status == "APPROVED" for t in listed)
        assert SimulatorProvider().list_templates(page) == []


def test_the_service_caches_the_list_per_address_for_a_minute(
    app: Flask, wa: Channel, meta: FakeMetaGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_many(meta, 3)
    clock = [1000.0]
    monkeypatch.setattr(template_list.time, "monotonic", lambda: clock[0])
    organization = uuid.UUID(wa.org.id)
    with app.app_context():
        first = services.approved_templates(organization, wa.address)
        meta.add_template(name="new_one", components=[{"type": "BODY", "text": "New"}])
        clock[0] += template_list.CACHE_SECONDS - 1
        assert [t.name for t in services.approved_templates(organization, wa.address)] == [
            t.name for t in first
        ]
        assert len(meta.template_lists()) == 1  # the composer's renders did not call Meta again
        clock[0] += 2
        names = [t.name for t in services.approved_templates(organization, wa.address)]
    assert names == ["new_one", "tpl_000", "tpl_001", "tpl_002"]  # sorted by name
    assert len(meta.template_lists()) == 2


def test_a_provider_failure_is_502_and_is_retried_after_a_few_seconds(
    app: Flask, wa: Channel, meta: FakeMetaGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(template_list.time, "monotonic", lambda: clock[0])
    meta.tokens.clear()  # Meta refuses the token
    organization = uuid.UUID(wa.org.id)
    with app.app_context():
        for _ in range(2):
            with pytest.raises(ApiError) as failed:
                services.approved_templates(organization, wa.address)
            assert (failed.value.status, failed.value.message) == (502, "Failed to get templates from Meta")
        assert len(meta.template_lists()) == 1  # the failure is remembered briefly
        meta.tokens.add("EAAtestToken0123456789")
        add_many(meta, 1)
        clock[0] += template_list.FAILURE_SECONDS + 1
        assert [t.name for t in services.approved_templates(organization, wa.address)] == ["tpl_000"]


def test_another_organizations_address_is_not_found(
    app: Flask, wa: Channel, other_org: Org, meta: FakeMetaGraph
) -> None:
    add_many(meta, 1)
    with app.app_context():
        assert len(services.approved_templates(uuid.UUID(wa.org.id), wa.address)) == 1
        with pytest.raises(ApiError) as missing:
            services.approved_templates(uuid.UUID(other_org.id), wa.address)
    assert missing.value.status == 404  # the cached list of another organization is not reached
