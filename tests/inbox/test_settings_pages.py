"""The labels and canned replies settings pages (``/settings/labels``, ``/settings/canned``): supervisors add,
edit and delete through the inbox and messaging verbs (the API sees the same catalogue), refusals come back
under their field in both languages, another organization's record is the designed 404, agents get 403 on
every URL, and every change is in the audit log with its before and after."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from tests.conftest import Org
from tests.inbox.conftest import msg
from tests.support.desk_users import create_desk_user, sign_in

CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
HX = {"HX-Request": "true"}
NOBODY = "00000000-0000-0000-0000-000000000000"


class Desk:
    def __init__(self, client: FlaskClient, language: str = "en") -> None:
        self.client = client
        self.language = language
        found = CSRF.search(client.get("/desk").get_data(as_text=True))
        assert found is not None
        self.csrf = found.group(1)

    def get(self, path: str, **headers: str) -> Any:
        return self.client.get(path, headers={**HX, "Accept-Language": self.language, **headers})

    def post(self, path: str, data: dict[str, str] | None = None) -> Any:
        headers = {**HX, "X-CSRFToken": self.csrf, "Accept-Language": self.language}
        return self.client.post(path, data=data or {}, headers=headers)


def _desk(
    app: Flask, runner: FlaskCliRunner, org: Org, role: str = "supervisor", language: str = "en"
) -> Desk:
    email = f"{role}.{language}.{org.id[:6]}@example.test"
    login = create_desk_user(runner, org.id, email, role=role)
    return Desk(sign_in(app.test_client(), login["email"]), language)


def _log(client: FlaskClient, org: Org, action: str) -> list[dict[str, Any]]:
    url = f"/v1/members/organizations/{org.id}/audit-log"
    answer = client.get(url, query_string={"action": action}, headers=org.headers())
    return answer.get_json()["data"]  # type: ignore[no-any-return]


def test_labels_add_edit_delete_with_their_flows(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    desk = _desk(app, runner, org)
    flow = client.post(
        msg(org, "/flows"),
        json={"name": "Bienvenida VIP", "trigger_labels": ["vip"], "interrupt_labels": ["baja"]},
        headers=org.headers(),
    )
    assert flow.status_code == 201, flow.get_json()

    page = desk.client.get("/settings/labels")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "Bienvenida VIP" in html  # vip was catalogued by the flow
    assert 'data-settings-nav="labels"' in html and 'aria-current="page"' in html

    added = desk.post(
        "/settings/labels", {"name": "Mayoreo", "color": "#2a9d8f", "description": "Compras grandes"}
    )
    body = added.get_data(as_text=True)
    assert added.status_code == 200 and "Mayoreo" in body and 'fill="#2a9d8f"' in body
    labels = client.get(msg(org, "/labels"), headers=org.headers()).get_json()["data"]
    found = [label for label in labels if label["name"] == "Mayoreo"]
    assert found, labels  # the API sees the page's label
    label_id = found[0]["id"]

    # a taken name, and an empty one, are refused under the field; nothing is written
    taken = desk.post("/settings/labels", {"name": "VIP"})
    assert taken.status_code == 422
    assert 'id="label-name-error"' in taken.get_data(as_text=True)
    assert "A label with this name already exists." in taken.get_data(as_text=True)
    empty = desk.post(f"/settings/labels/{label_id}", {"name": "  ", "color": "", "description": ""})
    assert empty.status_code == 422 and "Required." in empty.get_data(as_text=True)

    edit = desk.get(f"/settings/labels/{label_id}/edit").get_data(as_text=True)
    assert 'value="Mayoreo"' in edit
    saved = desk.post(f"/settings/labels/{label_id}", {"name": "Mayoristas", "color": "", "description": "x"})
    assert saved.status_code == 200 and "Mayoristas" in saved.get_data(as_text=True)

    assert "Delete label" in desk.get(f"/settings/labels/{label_id}/delete").get_data(as_text=True)
    deleted = desk.post(f"/settings/labels/{label_id}/delete")
    answer = deleted.get_data(as_text=True)
    assert (
        deleted.status_code == 200 and "Label “Mayoristas” deleted; removed from 0 conversations." in answer
    )
    assert f'data-label-id="{label_id}"' not in answer
    names = [
        label["name"] for label in client.get(msg(org, "/labels"), headers=org.headers()).get_json()["data"]
    ]
    assert "Mayoristas" not in names

    updated = _log(client, org, "label.updated")[0]["summary"]["changes"]
    assert updated["name"] == {"before": "Mayoreo", "after": "Mayoristas"}
    assert updated["color"] == {"before": "#2a9d8f", "after": None}
    assert _log(client, org, "label.created")[0]["actor"].startswith("user:")
    assert _log(client, org, "label.deleted")[0]["summary"]["changes"]["name"]["before"] == "Mayoristas"


def test_canned_replies_add_search_edit_delete(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    desk = _desk(app, runner, org, language="es")
    assert "Aún no hay respuestas" in desk.client.get(
        "/settings/canned", headers={"Accept-Language": "es"}
    ).get_data(as_text=True)
    added = desk.post(
        "/settings/canned",
        {"short_code": "hola", "title": "Saludo", "content": "Hola {{contact.first_name}}"},
    )
    assert added.status_code == 200 and "/hola" in added.get_data(as_text=True)
    listed = client.get(msg(org, "/canned-responses"), headers=org.headers()).get_json()["data"]
    canned_id = listed[0]["id"]

    refused = desk.post("/settings/canned", {"short_code": "Hola Mundo", "title": "", "content": " "})
    html = refused.get_data(as_text=True)
    assert refused.status_code == 422
    assert 'id="canned-code-error"' in html and 'id="canned-content-error"' in html
    assert "Obligatorio." in html  # Spanish words for the model's refusal
    taken = desk.post("/settings/canned", {"short_code": "hola", "content": "otra"})
    assert taken.status_code == 422 and "Otra respuesta ya usa este código corto." in taken.get_data(
        as_text=True
    )

    for n in range(55):  # more than a page: "Show more"
        client.post(
            msg(org, "/canned-responses"),
            json={"short_code": f"r{n:02d}", "content": "x"},
            headers=org.headers(),
        )
    first = desk.client.get("/settings/canned").get_data(as_text=True)
    assert first.count("data-canned-id=") == 50 and 'id="canned-more"' in first
    rest = desk.get("/settings/canned?skip=50", **{"HX-Target": "canned-more"}).get_data(as_text=True)
    assert rest.count("data-canned-id=") == 6 and "<html" not in rest
    search = desk.get("/settings/canned?q=salu", **{"HX-Target": "canned-list"}).get_data(as_text=True)
    assert search.count("data-canned-id=") == 1 and "/hola" in search

    saved = desk.post(
        f"/settings/canned/{canned_id}", {"short_code": "saludo", "title": "", "content": "Buen día"}
    )
    assert saved.status_code == 200 and "/saludo" in saved.get_data(as_text=True)
    clash = desk.post(f"/settings/canned/{canned_id}", {"short_code": "r01", "title": "", "content": "x"})
    assert clash.status_code == 422 and 'id="canned-code-' in clash.get_data(as_text=True)

    deleted = desk.post(f"/settings/canned/{canned_id}/delete")
    assert deleted.status_code == 200 and "data-canned-id" not in deleted.get_data(as_text=True)
    assert client.get(msg(org, f"/canned-responses/{canned_id}"), headers=org.headers()).status_code == 404

    changes = _log(client, org, "canned_response.updated")[0]["summary"]["changes"]
    assert changes["short_code"] == {"before": "hola", "after": "saludo"}
    assert changes["title"] == {"before": "Saludo", "after": None}


def test_another_organizations_records_are_not_found(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org, other_org: Org
) -> None:
    label = client.post(msg(org, "/labels"), json={"name": "Privada"}, headers=org.headers()).get_json()
    canned = client.post(
        msg(org, "/canned-responses"), json={"short_code": "secreto", "content": "x"}, headers=org.headers()
    ).get_json()
    outsider = _desk(app, runner, other_org)
    for path in (
        f"/settings/labels/{label['id']}",
        f"/settings/labels/{label['id']}/edit",
        "/settings/labels/x/delete",
    ):
        assert outsider.get(path).status_code == 404
    assert outsider.post(f"/settings/labels/{label['id']}/delete").status_code == 404
    assert (
        outsider.post(f"/settings/canned/{canned['id']}", {"short_code": "a", "content": "b"}).status_code
        == 404
    )
    assert outsider.post(f"/settings/canned/{canned['id']}/delete").status_code == 404
    assert "Privada" not in outsider.client.get("/settings/labels").get_data(as_text=True)
    assert "secreto" not in outsider.client.get("/settings/canned").get_data(as_text=True)
    assert client.get(msg(org, f"/canned-responses/{canned['id']}"), headers=org.headers()).status_code == 200


def test_agents_get_403_on_every_url(app: Flask, runner: FlaskCliRunner, org: Org) -> None:
    agent = _desk(app, runner, org, role="agent")
    gets = ["/settings/labels", "/settings/canned"] + [
        f"/settings/{kind}/{NOBODY}{tail}"
        for kind in ("labels", "canned")
        for tail in ("", "/edit", "/delete")
    ]
    posts = ["/settings/labels", "/settings/canned"] + [
        f"/settings/{kind}/{NOBODY}{tail}" for kind in ("labels", "canned") for tail in ("", "/delete")
    ]
    assert [agent.get(path).status_code for path in gets] == [403] * len(gets)
    assert [agent.post(path, {"name": "x"}).status_code for path in posts] == [403] * len(posts)
    assert app.test_client().get("/settings/labels").status_code == 302  # signed out: to the sign-in page
