"""The members area's desk pages, one module per page (``common`` holds the blueprint they share): the
availability dashboard (``team``), and the settings pages for people (``people``), teams (``teams``) and
unavailability reasons (``reasons``). Supervisors only. Importing the package registers every route."""

from blueprints.members.pages import (
    people,  # noqa: F401  (registers its routes)
    reasons,  # noqa: F401
    team,  # noqa: F401
    teams,  # noqa: F401
)
from blueprints.members.pages.common import pages

__all__ = ["pages"]
