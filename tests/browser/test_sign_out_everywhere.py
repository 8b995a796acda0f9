""" "Sign out everywhere" from the desk's top bar, in a real browser: the menu opens under the page's
policy, is accessible, and signs out the same user's other browser too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.browser.conftest import DeskLogin, axe_violations, sign_in
from tests.conftest import Org


def test_sign_out_everywhere_signs_out_the_other_browser_too(
    new_context: Callable[..., Any], make_user: Callable[..., DeskLogin], org: Org
) -> None:
    login = make_user(org, "Ana Agent")
    laptop, phone = new_context().new_page(), new_context().new_page()
    for page in (laptop, phone):
        sign_in(page, login, remember=True)
        page.wait_for_url("**/desk")
    laptop.get_by_role("button", name="More sign-out options").click()
    everywhere = laptop.get_by_role("button", name="Sign out everywhere")
    assert everywhere.is_visible()
    assert axe_violations(laptop) == []
    everywhere.click()
    laptop.wait_for_url("**/signin")
    phone.goto("/desk")  # its cookies are still in that browser, but its sign-in has ended
    assert "/signin" in phone.url
