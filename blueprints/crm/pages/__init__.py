"""The CRM's desk pages, one module per page (``common`` holds the blueprint they share): the inbox
panel's fragments (``panel``), the deal kanban (``deals``), the ticket board (``tickets``), tasks
(``tasks``) and contacts with accounts (``contacts``). Importing the package registers every route."""

from blueprints.crm.pages import (
    contacts,  # noqa: F401
    deals,  # noqa: F401
    panel,  # noqa: F401  (registers its routes)
    tasks,  # noqa: F401
    tickets,  # noqa: F401
)
from blueprints.crm.pages.common import pages

__all__ = ["pages"]
