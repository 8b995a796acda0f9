"""Knowledge: the organization's documents (CRUD) and the one full-text search that the
``search_knowledge`` tool, the offline responder and the playground all use.

Search, in two steps:

1. **Retrieval by the store's full-text index** over ``search_text`` (title and body folded: lower case,
   accents removed). The question is cut into words, common English and Spanish words are dropped, and
   each remaining word is looked up as a *prefix* (``envio*`` finds "envío" and "envíos"; a stemmer per
   language would need to know the language), any word matching (OR). SQLite: ``knowledge_documents_fts
   MATCH 'envio* OR horario*'`` ranked by ``bm25``; PostgreSQL: ``to_tsvector('simple', search_text) @@
   to_tsquery('simple', 'envio:* | horario:*')`` (the GIN index) ranked by ``ts_rank_cd``. Words are
   reduced to letters and digits first, so no query syntax can come from the customer.
2. **Passages**: each candidate document (and the agent's ``sections.knowledge``) is cut into passages
   (paragraphs), and a passage scores the number of distinct query words it contains (by the same prefix
   rule); ties go to the store's rank. A passage is *relevant* when it contains at least half of the
   query's words (and at least one).
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, literal_column, or_, select, text

from blueprints.ai.models import KNOWLEDGE_FTS, KnowledgeDocument
from blueprints.audit import services as audit_log
from blueprints.members.services.members import find_member
from core.db import db
from core.errors import ApiError
from core.pagination import Page, paginate
from core.tenancy import get_for_org

# Words that carry no meaning for a search, in the two languages of the desk's customers.
_STOP_WORDS_TEXT = """
a al algo algun alguna alguno ante antes aqui asi cual cuales cuando como con de del desde donde el ella
ellos en entre era es esa ese eso esta estan este esto estoy fue ha hay hola la las le les lo los mas me mi
mis mucho muy ni no nos o os otra otro para pero poco por porque puede puedo que quien se ser si sin sobre
son su sus tambien te tengo tiene tienen tu tus un una uno unos usted ustedes y ya yo gracias quiero
quisiera saber necesito favor buenas buenos dias tardes noches perfecto perfecta listo vale ok okay claro
genial excelente bien muchas muchisimas adios saludos
about an and any are as at be been but by can could do does did for from get had has have hello hi how i
if in into is it its me my not of on or our please so than that the their them then there these they
this to us was we what when where which who why will with would you your yours thanks thank want know
need tell great perfect fine good thx bye ok okay yes sure cool
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
MIN_WORD = 2
MAX_WORDS = 12
CANDIDATES = 20


def fold(value: str) -> str:
    """Lower case without accents ("Envío" -> "envio"): what the index holds and the query is made of."""
    decomposed = unicodedata.normalize("NFKD", value.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def query_words(question: str) -> list[str]:
    """The question's searchable words: folded, letters and digits only, no stop words, plural ``s``
    dropped (the prefix match finds both forms), in order, without repeats."""
    words: list[str] = []
    for raw in re.findall(r"[a-z0-9]+", fold(question)):
        if raw in STOP_WORDS or len(raw) < MIN_WORD:
            continue
        word = raw
        if len(raw) > 5 and raw.endswith("es"):
            word = raw[:-2]
        elif len(raw) > 3 and raw.endswith("s"):
            word = raw[:-1]
        if word not in words:
            words.append(word)
    return words[:MAX_WORDS]


def _text_words(value: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", fold(value)))


def matched_words(words: list[str], passage: str) -> int:
    """How many of the query's words the passage contains (a word of the passage starting with it)."""
    present = _text_words(passage)
    return sum(1 for word in words if any(candidate.startswith(word) for candidate in present))


def relevant(score: int, words: list[str]) -> bool:
    return bool(words) and score >= 1 and score * 2 >= len(words)


def passages(body: str) -> list[str]:
    """Paragraphs (blank-line separated; a text without blank lines: its lines)."""
    chunks = [c.strip() for c in re.split(r"\n\s*\n", body) if c.strip()]
    if len(chunks) <= 1:
        chunks = [c.strip() for c in body.splitlines() if c.strip()]
    return chunks


@dataclass(frozen=True)
class Hit:
    passage: str
    title: str | None
    source: str  # "section" (the agent's sections.knowledge) or "document"
    document_id: str | None
    score: int
    rank: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "passage": self.passage,
            "source": self.source,
            "document_id": self.document_id,
            "score": self.score,
        }


def _candidates(
    organization_id: uuid.UUID, agent_id: str | None, words: list[str]
) -> list[tuple[Any, float]]:
    """Documents matching any word, best first, through the store's full-text index."""
    scope = KnowledgeDocument.agent_id.is_(None)
    if agent_id is not None:
        scope = or_(scope, KnowledgeDocument.agent_id == agent_id)
    if db.session.get_bind().dialect.name == "sqlite":
        match = " OR ".join(f"{word}*" for word in words)
        fts = text(
            f"SELECT rowid AS doc_rowid, bm25({KNOWLEDGE_FTS}) AS rank FROM {KNOWLEDGE_FTS} "
            f"WHERE {KNOWLEDGE_FTS} MATCH :match"
        ).columns(literal_column("doc_rowid"), literal_column("rank"))
        hits = fts.bindparams(match=match).subquery("hits")
        statement = (
            select(KnowledgeDocument, hits.c.rank)
            .join(hits, literal_column("knowledge_documents.rowid") == hits.c.doc_rowid)
            .where(KnowledgeDocument.organization_id == organization_id, scope)
            .order_by(hits.c.rank, KnowledgeDocument.id)  # bm25: lower is better
            .limit(CANDIDATES)
        )
        return [(document, -float(rank)) for document, rank in db.session.execute(statement).all()]
    vector = func.to_tsvector(literal_column("'simple'::regconfig"), KnowledgeDocument.search_text)
    query = func.to_tsquery(literal_column("'simple'::regconfig"), " | ".join(f"{word}:*" for word in words))
    rank = func.ts_rank_cd(vector, query)
    statement = (
        select(KnowledgeDocument, rank)
        .where(KnowledgeDocument.organization_id == organization_id, scope, vector.op("@@")(query))
        .order_by(rank.desc(), KnowledgeDocument.id)
        .limit(CANDIDATES)
    )
    return [(document, float(score)) for document, score in db.session.execute(statement).all()]


def search(
    organization_id: uuid.UUID,
    question: str,
    *,
    agent_id: str | None = None,
    section: str | None = None,
    limit: int = 3,
) -> list[Hit]:
    """The best passages for ``question``: the organization's documents (plus the agent's own) and the
    agent's ``sections.knowledge`` text, best first; only passages containing at least one query word."""
    words = query_words(question)
    if not words:
        return []
    hits: list[Hit] = []
    for passage in passages(section or ""):
        score = matched_words(words, passage)
        if score:
            # The agent's own section wins ties over documents (rank above any store rank).
            hits.append(Hit(passage, None, "section", None, score, float("inf")))
    for document, rank in _candidates(organization_id, agent_id, words):
        title_score = matched_words(words, document.title)
        best: Hit | None = None
        for passage in passages(document.body):
            score = len({w for w in words if matched_words([w], f"{document.title}\n{passage}")})
            if best is None or score > best.score:
                best = Hit(passage, document.title, "document", str(document.id), score, rank)
        if best is None and title_score:
            best = Hit(document.body.strip(), document.title, "document", str(document.id), title_score, rank)
        if best is not None and best.score:
            hits.append(best)
    hits.sort(key=lambda hit: (-hit.score, -hit.rank))
    return hits[:limit]


def best_relevant(
    organization_id: uuid.UUID, question: str, *, agent_id: str | None, section: str | None
) -> Hit | None:
    """The best passage if it is relevant (at least half of the question's words), else None."""
    words = query_words(question)
    found = search(organization_id, question, agent_id=agent_id, section=section, limit=1)
    if found and relevant(found[0].score, words):
        return found[0]
    return None


# ------------------------------------------------------------------------------------------ documents


def _check_agent(organization_id: uuid.UUID, agent_id: str | None) -> None:
    if agent_id is None:
        return

    member = find_member(organization_id, agent_id)
    if member is None or not member.ai:
        raise ApiError(400, f"agent_id: no AI agent with id {agent_id!r}", param="agent_id")


def _index(document: KnowledgeDocument) -> None:
    document.search_text = fold(f"{document.title}\n{document.body}")


# What a document's audit entries name (never the values).
_DOCUMENT_FIELDS = ("title", "body", "source", "agent_id")


def create_document(organization_id: uuid.UUID, fields: dict[str, Any]) -> KnowledgeDocument:
    """``fields``: title, body, and optionally source and agent_id (an AI agent of the organization)."""
    _check_agent(organization_id, fields.get("agent_id"))
    document = KnowledgeDocument(
        organization_id=organization_id,
        agent_id=fields.get("agent_id"),
        title=fields["title"],
        body=fields["body"],
        source=fields.get("source"),
    )
    _index(document)
    db.session.add(document)
    db.session.flush()
    audit_log.record(
        "knowledge_document.created",
        "knowledge_document",
        document.id,
        [name for name in _DOCUMENT_FIELDS if getattr(document, name) is not None],
        organization_id=organization_id,
    )
    return document


def get_document(organization_id: uuid.UUID, document_id: str) -> KnowledgeDocument:
    return get_for_org(KnowledgeDocument, document_id, organization_id, "Knowledge document")


def update_document(
    organization_id: uuid.UUID, document_id: str, fields: dict[str, Any]
) -> KnowledgeDocument:
    """Only the fields sent; ``source`` and ``agent_id`` accept null. A change is audited with the names of
    the fields whose value changed (none changed: no entry)."""
    document = get_document(organization_id, document_id)
    before = {name: getattr(document, name) for name in _DOCUMENT_FIELDS}
    if "agent_id" in fields:
        _check_agent(organization_id, fields["agent_id"])
        document.agent_id = fields["agent_id"]
    for name in ("title", "body"):
        if fields.get(name) is not None:
            setattr(document, name, fields[name])
    if "source" in fields:
        document.source = fields["source"]
    _index(document)
    db.session.flush()
    changed = [name for name in _DOCUMENT_FIELDS if getattr(document, name) != before[name]]
    if changed:
        audit_log.record(
            "knowledge_document.updated",
            "knowledge_document",
            document.id,
            changed,
            organization_id=organization_id,
        )
    return document


def delete_document(organization_id: uuid.UUID, document_id: str) -> None:
    db.session.delete(get_document(organization_id, document_id))
    db.session.flush()
    audit_log.record(
        "knowledge_document.deleted", "knowledge_document", document_id, organization_id=organization_id
    )


def list_documents(
    organization_id: uuid.UUID,
    *,
    agent_id: str | None,
    search_text: str | None,
    offset: int,
    limit: int,
    used_by: str | None = None,
    after: uuid.UUID | None = None,
) -> Page[KnowledgeDocument]:
    """By title. ``agent_id``: that agent's own documents only; ``used_by``: the documents that agent
    answers from (its own and the organization's shared ones, as :func:`search` scopes them).
    ``after``: a document's id, the page starts after it in the title order (keyset, the desk's "Show
    more": documents added meanwhile never shift a page; one query more; an id of another organization
    starts over)."""
    statement = select(KnowledgeDocument).where(KnowledgeDocument.organization_id == organization_id)
    if agent_id is not None:
        statement = statement.where(KnowledgeDocument.agent_id == agent_id)
    if used_by is not None:
        statement = statement.where(
            or_(KnowledgeDocument.agent_id.is_(None), KnowledgeDocument.agent_id == used_by)
        )
    if search_text:
        found = search(organization_id, search_text, agent_id=agent_id or used_by, limit=50)
        ids = [uuid.UUID(hit.document_id) for hit in found if hit.document_id]
        statement = statement.where(KnowledgeDocument.id.in_(ids))
    if after is not None:
        title = db.session.scalar(
            select(KnowledgeDocument.title).where(
                KnowledgeDocument.organization_id == organization_id, KnowledgeDocument.id == after
            )
        )
        if title is not None:
            statement = statement.where(
                or_(
                    KnowledgeDocument.title > title,
                    and_(KnowledgeDocument.title == title, KnowledgeDocument.id > after),
                )
            )
    statement = statement.order_by(KnowledgeDocument.title, KnowledgeDocument.id)
    return paginate(statement, offset=offset, limit=limit)
