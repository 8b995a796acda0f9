"""A deal's line items in the order its owner gives them: ``position`` 0..n-1 on every item the API shows,
a new item last, ``PATCH …/line-items/{itemId} {position}`` moving one (the others shift), a place past the
last refused naming ``position``, a removal closing the gap, the amount and its activity untouched by a
move (which still publishes ``deal.updated``), another organization's deal and item not found, the desk
drawer's move route, and the migration numbering existing items in their old order."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

from app import create_app
from blueprints.crm.drafts import DealDraft, LineItemChanges, LineItemDraft
from blueprints.crm.rules import Refusal
from blueprints.crm.services import deals as deal_services
from blueprints.crm.services import pipelines as pipeline_services
from core import events
from core.db import db
from tests.conftest import Org
from tests.crm.conftest import Crm, crm_error, not_found_body
from tests.crm.test_deal_pages import HX, Desk, _desk
from tests.support.stores import Stores


def _deal_with_items(crm: Crm, *names: str, **deal: Any) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    created = crm.deal(**deal)
    items = {}
    for index, name in enumerate(names):
        body = {"name": name, "quantity": 1, "unit_price": 10 * (index + 1)}
        items[name] = crm.ok(crm.post(f"/deals/{created['id']}/line-items", body), 201)
    return created, items


def _order(crm: Crm, deal: dict[str, Any]) -> list[tuple[str, int]]:
    """The deal's items as the API lists them: (name, position)."""
    return [
        (item["name"], item["position"]) for item in crm.ok(crm.get(f"/deals/{deal['id']}"))["line_items"]
    ]


def _move(crm: Crm, deal: dict[str, Any], item: dict[str, Any], position: Any) -> Any:
    return crm.patch(f"/deals/{deal['id']}/line-items/{item['id']}", {"position": position})


# ---- the API ---------------------------------------------------------------------------------------------


def test_a_new_item_goes_last_and_every_item_shows_its_position(crm: Crm) -> None:
    deal, items = _deal_with_items(crm, "Alpha", "Beta", "Gamma")
    assert [items[name]["position"] for name in ("Alpha", "Beta", "Gamma")] == [0, 1, 2]
    assert _order(crm, deal) == [("Alpha", 0), ("Beta", 1), ("Gamma", 2)]
    listed = crm.ok(crm.get("/deals"))["data"][0]["line_items"]
    assert [item["position"] for item in listed] == [0, 1, 2]


def test_moving_the_first_item_last_and_back(crm: Crm, commits: Callable[[], Any]) -> None:
    deal, items = _deal_with_items(crm, "Alpha", "Beta", "Gamma")
    with commits() as counted:
        moved = crm.ok(_move(crm, deal, items["Alpha"], 2))
    assert counted.count == 1
    assert (moved["id"], moved["position"], moved["name"]) == (items["Alpha"]["id"], 2, "Alpha")
    assert _order(crm, deal) == [("Beta", 0), ("Gamma", 1), ("Alpha", 2)]
    assert crm.ok(_move(crm, deal, items["Alpha"], 0))["position"] == 0
    assert _order(crm, deal) == [("Alpha", 0), ("Beta", 1), ("Gamma", 2)]
    # to the middle, and to where it already is
    crm.ok(_move(crm, deal, items["Gamma"], 1))
    assert _order(crm, deal) == [("Alpha", 0), ("Gamma", 1), ("Beta", 2)]
    crm.ok(_move(crm, deal, items["Gamma"], 1))
    assert _order(crm, deal) == [("Alpha", 0), ("Gamma", 1), ("Beta", 2)]


def test_a_move_with_other_fields_changes_both(crm: Crm) -> None:
    deal, items = _deal_with_items(crm, "Alpha", "Beta")
    body = {"position": 0, "quantity": 3}
    moved = crm.ok(crm.patch(f"/deals/{deal['id']}/line-items/{items['Beta']['id']}", body))
    assert (moved["position"], moved["quantity"], moved["total"]) == (0, 3, "60.00")
    assert _order(crm, deal) == [("Beta", 0), ("Alpha", 1)]
    assert crm.ok(crm.get(f"/deals/{deal['id']}"))["amount"] == "70.00"


def test_a_place_past_the_last_item_is_refused_naming_position(crm: Crm) -> None:
    deal, items = _deal_with_items(crm, "Alpha", "Beta", "Gamma")
    refused = _move(crm, deal, items["Alpha"], 3)
    assert refused.status_code == 400
    assert refused.get_json() == crm_error(400, "position: must be from 0 to 2 (the deal has 3 line items)")
    for wrong in (-1, "first", 1.5, 2**31):
        response = _move(crm, deal, items["Alpha"], wrong)
        assert response.status_code == 400, (wrong, response.get_json())
        assert response.get_json()["error"]["message"].startswith("position: "), wrong
    assert _order(crm, deal) == [("Alpha", 0), ("Beta", 1), ("Gamma", 2)]
    # null says nothing about the place (as for the other fields of the PATCH)
    assert crm.ok(_move(crm, deal, items["Beta"], None))["position"] == 1


def test_the_verb_refuses_with_a_code_and_the_field(app: Flask, org: Org) -> None:
    organization_id = uuid.UUID(org.id)
    with app.app_context():
        pipeline = pipeline_services.list_pipelines(organization_id)[0]
        deal = deal_services.create_deal(
            organization_id, DealDraft("Verb", pipeline_id=pipeline.id, stage_id=pipeline.stages[0].id)
        )
        item = deal_services.add_line_item(organization_id, deal.id, LineItemDraft("One", 1, 5))
        db.session.commit()
        with pytest.raises(Refusal) as refused:
            deal_services.update_line_item(organization_id, deal.id, item.id, LineItemChanges(position=1))
        db.session.rollback()
    assert (refused.value.status, refused.value.code, refused.value.param) == (
        400,
        "position_out_of_range",
        "position",
    )
    assert refused.value.detail == {"max": 0, "count": 1}


def test_positions_stay_contiguous_after_a_removal(crm: Crm) -> None:
    deal, items = _deal_with_items(crm, "Alpha", "Beta", "Gamma", "Delta")
    crm.ok(crm.delete(f"/deals/{deal['id']}/line-items/{items['Beta']['id']}"))
    assert _order(crm, deal) == [("Alpha", 0), ("Gamma", 1), ("Delta", 2)]
    crm.ok(crm.delete(f"/deals/{deal['id']}/line-items/{items['Alpha']['id']}"))
    assert _order(crm, deal) == [("Gamma", 0), ("Delta", 1)]
    added = crm.ok(
        crm.post(f"/deals/{deal['id']}/line-items", {"name": "Epsilon", "quantity": 1, "unit_price": 1}), 201
    )
    assert added["position"] == 2
    assert _order(crm, deal) == [("Gamma", 0), ("Delta", 1), ("Epsilon", 2)]


@pytest.fixture
def received() -> Iterator[list[events.DomainEvent]]:
    seen: list[events.DomainEvent] = []
    events.subscribe("deal.updated", seen.append)
    yield seen
    events._subscribers["deal.updated"].remove(seen.append)


def test_a_move_keeps_the_amount_records_no_amount_change_and_publishes(
    crm: Crm, received: list[events.DomainEvent]
) -> None:
    deal, items = _deal_with_items(crm, "Alpha", "Beta", "Gamma", currency="USD")
    before = crm.ok(crm.get(f"/deals/{deal['id']}"))
    activities = crm.ok(crm.get(f"/deals/{deal['id']}/activities"))["total"]
    received.clear()
    crm.ok(_move(crm, deal, items["Gamma"], 0))
    after = crm.ok(crm.get(f"/deals/{deal['id']}"))
    assert (after["amount"], after["currency"]) == (before["amount"], before["currency"]) == ("60.00", "USD")
    assert [i["total"] for i in after["line_items"]] == ["30.00", "10.00", "20.00"]
    assert crm.ok(crm.get(f"/deals/{deal['id']}/activities"))["total"] == activities
    assert [(e.name, e.data["change"], e.data["amount"]) for e in received] == [
        ("deal.updated", "line_items", "60.00")
    ]
    # a refused move publishes nothing
    received.clear()
    assert _move(crm, deal, items["Gamma"], 7).status_code == 400
    assert received == []


def test_another_organizations_deal_and_item_are_not_found(crm: Crm, other_crm: Crm) -> None:
    deal, items = _deal_with_items(crm, "Alpha", "Beta")
    foreign, foreign_items = _deal_with_items(other_crm, "Secret one", "Secret two")
    secret = foreign_items["Secret one"]
    # their deal through our key; their item under our deal; our item under their deal
    assert _move(crm, foreign, secret, 1).get_json() == not_found_body("Deal")
    assert crm.patch(f"/deals/{deal['id']}/line-items/{secret['id']}", {"position": 1}).get_json() == (
        not_found_body("Line item")
    )
    assert other_crm.patch(
        f"/deals/{foreign['id']}/line-items/{items['Alpha']['id']}", {"position": 1}
    ).get_json() == not_found_body("Line item")
    assert _order(other_crm, foreign) == [("Secret one", 0), ("Secret two", 1)]
    assert _order(crm, deal) == [("Alpha", 0), ("Beta", 1)]


def test_concurrent_adds_and_moves_keep_positions_contiguous(app: Flask, crm: Crm, org: Org) -> None:
    """The line-item verbs of one deal take turns (its row locked; SQLite's write lock taken first): items
    added at once get distinct places, and moves racing them never leave a gap or a place twice."""
    deal, items = _deal_with_items(crm, "Alpha", "Beta")
    workers = 8
    barrier = threading.Barrier(workers)
    statuses: list[int] = [0] * workers

    def worker(index: int) -> None:
        client = app.test_client()  # its own client, request contexts and database session
        base = f"/v1/crm/organizations/{org.id}/deals/{deal['id']}/line-items"
        barrier.wait()
        if index % 4 == 3:  # two of them move Alpha, then Beta, to place 1 while the others add
            target = items["Alpha" if index % 8 == 3 else "Beta"]["id"]
            response = client.patch(f"{base}/{target}", headers=org.headers(), json={"position": 1})
        else:
            body = {"name": f"Added {index}", "quantity": 1, "unit_price": 1}
            response = client.post(base, headers=org.headers(), json=body)
        statuses[index] = response.status_code

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(statuses) == [200, 200, 201, 201, 201, 201, 201, 201]
    listed = crm.ok(crm.get(f"/deals/{deal['id']}"))
    assert [item["position"] for item in listed["line_items"]] == list(range(2 + 6))
    assert listed["amount"] == "36.00"  # 10 + 20 + six items of 1


def test_the_openapi_document_declares_position(crm: Crm) -> None:
    document = crm.client.get("/openapi.json").get_json()
    schemas = document["components"]["schemas"]
    update = schemas["LineItemUpdate"]["properties"]["position"]
    integer = next(arm for arm in update["anyOf"] if arm.get("type") == "integer")
    assert integer["minimum"] == 0 and "position_out_of_range" in update["description"]
    assert schemas["LineItemOut"]["properties"]["position"]["type"] == "integer"
    assert "position" in schemas["LineItemOut"]["required"]
    path = "/v1/crm/organizations/{organization_id}/deals/{id}/line-items/{itemId}"
    assert "patch" in document["paths"][path]


# ---- the desk's drawer -------------------------------------------------------------------------------------


@pytest.fixture
def agent(app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    return _desk(app, runner, org, "Ana Agent")


def _rows(html: str) -> list[str]:
    """The item ids of the fragment's rows, in their order."""
    import re

    return re.findall(r'<tr id="item-([0-9a-f-]{36})"', html)


def test_the_drawer_moves_an_item_and_answers_the_items_in_order(agent: Desk, crm: Crm) -> None:
    deal, items = _deal_with_items(crm, "Alpha", "Beta", "Gamma", owner_id=agent.member_id)
    ids = {name: item["id"] for name, item in items.items()}
    url = f"/deals/{deal['id']}/items/{ids['Alpha']}/position"
    answer = agent.post(url, position="2")
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200 and "<html" not in html
    assert _rows(html) == [ids["Beta"], ids["Gamma"], ids["Alpha"]]
    assert _order(crm, deal) == [("Beta", 0), ("Gamma", 1), ("Alpha", 2)]
    # the rows' hooks: the list, each row's move URL, a handle, the buttons (the first cannot go up)
    assert 'data-sortable-list data-sortable-swap="#deal-items"' in html
    assert f'data-move-url="/deals/{deal["id"]}/items/{ids["Beta"]}/position"' in html
    assert html.count("data-sortable-handle") == 3 and html.count('data-sortable-move="up"') == 3
    assert 'data-sortable-move="up" disabled aria-label="Move Beta up"' in html
    assert 'data-sortable-move="down" disabled aria-label="Move Alpha down"' in html
    assert "Line 3 of 3" in html and 'id="deal-amount"' in html  # the headline's amount out of band
    # "Move up" from the last row, in Spanish
    spanish = agent.post(url, language="es", position="1").get_data(as_text=True)
    assert _rows(spanish) == [ids["Beta"], ids["Alpha"], ids["Gamma"]]
    assert (
        "Subir Alpha" in spanish
        and "Línea 2 de 3" in spanish
        and 'title="Arrastra para reordenar"' in spanish
    )


def test_the_drawer_says_a_refused_place_by_the_row(agent: Desk, crm: Crm) -> None:
    deal, items = _deal_with_items(crm, "Alpha", "Beta", owner_id=agent.member_id)
    url = f"/deals/{deal['id']}/items/{items['Beta']['id']}/position"
    refused = agent.post(url, language="es", position="5")
    html = refused.get_data(as_text=True)
    assert refused.status_code == 422
    assert f'id="item-{items["Beta"]["id"]}-position-error"' in html
    assert "El negocio tiene 2 partidas: elige un lugar entre ellas." in html
    assert (
        f'aria-describedby="item-{items["Beta"]["id"]}-place item-{items["Beta"]["id"]}-position-error"'
        in html
    )
    assert agent.post(url, position="").status_code == 422
    assert agent.post(url, position="arriba").status_code == 422
    assert _order(crm, deal) == [("Alpha", 0), ("Beta", 1)]
    # an item that is not there (removed elsewhere) is the desk's alert, not a field's words
    gone = agent.post(f"/deals/{deal['id']}/items/{uuid.uuid4()}/position", position="0")
    assert gone.status_code == 404 and gone.headers.get("HX-Retarget") == "#desk-alerts"


def test_another_organizations_deal_is_not_moved_from_the_drawer(
    app: Flask, runner: FlaskCliRunner, other_org: Org, crm: Crm
) -> None:
    deal, items = _deal_with_items(crm, "Alpha", "Beta")
    outsider = _desk(app, runner, other_org, "Gus Globex")
    answer = outsider.post(f"/deals/{deal['id']}/items/{items['Alpha']['id']}/position", position="1")
    assert answer.status_code == 404 and "Alpha" not in answer.get_data(as_text=True)
    assert _order(crm, deal) == [("Alpha", 0), ("Beta", 1)]
    assert outsider.get(f"/deals/{deal['id']}", **HX).status_code == 404


# ---- the migration -----------------------------------------------------------------------------------------


@pytest.fixture
def fresh_store(stores: Stores, tmp_path: Path) -> Iterator[str]:
    """An empty store of the lane's kind (SQLite file, or a PostgreSQL database of its own)."""
    if stores.backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'migration.db'}"
        return
    url = make_url(stores.live_url)
    fresh = url.set(database=f"{url.database}_items_migration")
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{fresh.database}"'))
        connection.execute(text(f'CREATE DATABASE "{fresh.database}"'))
    yield fresh.render_as_string(hide_password=False)
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{fresh.database}" WITH (FORCE)'))
    admin.dispose()


def test_the_migration_numbers_existing_items_in_their_old_order(
    app_config: dict[str, Any], fresh_store: str
) -> None:
    """Items stored before crm_0007 were shown by ``created_at``: each deal's are numbered 0..n-1 in that
    order (ties by id), and the column is NOT NULL afterwards."""
    from alembic import command

    from blueprints.organizations.models import Organization
    from core.migrations import alembic_config, upgrade

    fresh = create_app({**app_config, "DATABASE_URL": fresh_store, "SANDBOX_DATABASE_URL": fresh_store})
    with fresh.app_context():
        try:
            upgrade("heads")
            organization = Organization(name="Migrated", products=[])
            db.session.add(organization)
            db.session.flush()
            pipeline = pipeline_services.list_pipelines(organization.id)[0]
            made = {}
            for deal_name, item_names in (("First", "ABCD"), ("Second", "XY")):
                draft = DealDraft(deal_name, pipeline_id=pipeline.id, stage_id=pipeline.stages[0].id)
                deal = deal_services.create_deal(organization.id, draft)
                made[deal_name] = [
                    deal_services.add_line_item(organization.id, deal.id, LineItemDraft(name, 1, 1)).id
                    for name in item_names
                ]
            db.session.commit()
            command.downgrade(alembic_config(), "crm@crm_0006")
            # shown until now by created_at: First as D, B, then A and C at one instant (by id); Second: Y, X
            a, b, c, d = made["First"]
            x, y = made["Second"]
            tie = datetime(2026, 3, 1, tzinfo=UTC)
            stamps = {
                d: datetime(2026, 1, 1, tzinfo=UTC),
                b: datetime(2026, 2, 1, tzinfo=UTC),
                a: tie,
                c: tie,
            }
            stamps |= {y: datetime(2026, 1, 1, tzinfo=UTC), x: datetime(2026, 1, 2, tzinfo=UTC)}
            table = db.metadata.tables["crm_deal_line_items"]
            for item_id, stamp in stamps.items():
                db.session.execute(table.update().where(table.c.id == item_id).values(created_at=stamp))
            db.session.commit()
            upgrade("heads")
            rows = db.session.execute(
                text("SELECT name, position FROM crm_deal_line_items ORDER BY deal_id, position")
            ).all()
            first_tie = [name for item_id, name in sorted([(a, "A"), (c, "C")])]
            assert sorted(rows, key=lambda row: (row[0] in "XY", row[1])) == [
                ("D", 0),
                ("B", 1),
                (first_tie[0], 2),
                (first_tie[1], 3),
                ("Y", 0),
                ("X", 1),
            ]
            with pytest.raises(IntegrityError), db.engine.begin() as connection:
                connection.execute(text("UPDATE crm_deal_line_items SET position = NULL"))
        finally:
            db.session.remove()
            db.engine.dispose()
