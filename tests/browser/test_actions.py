"""Page actions on a real Chromium: on background tabs, with stale refs, dialogs and new tabs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import tabpilot._actions
from support import png_size, ref_of, wait_until
from tabpilot import (
    ActionError,
    BrowserOptions,
    DialogOpenError,
    ForeignRefError,
    Instance,
    StaleRefError,
    Tab,
    TabManager,
    TabNotFoundError,
    Telemetry,
    click,
    evaluate,
    fill_form,
    hover,
    navigate,
    press_key,
    resize,
    screenshot,
    select_option,
    type_text,
    upload_files,
    wait_for,
)
from tabpilot.demo.site import LocalSite
from tabpilot.server.advice import error_text


async def open_tabs(manager: TabManager, instance: Instance, *urls: str) -> list[Tab]:
    """Open tabs in order; the last one ends up active."""
    return [await manager.new_tab(url, instance_id=instance.id) for url in urls]


async def test_typing_selecting_and_clicking_on_a_background_tab_leave_the_active_tab_active(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    form, front = await open_tabs(manager, instance, site.url("/form"), site.url("/page/a"))
    snap = await form.snapshot()

    await type_text(form, ref_of(snap, 'textbox "Name"'), "Ada")
    selected = await select_option(form, ref_of(snap, "combobox"), ["green"])
    await hover(form, ref_of(snap, "Hover me"))
    await click(form, ref_of(snap, 'button "Submit"'))

    assert selected.value == ["green"]
    await wait_for(form, text="Name=Ada; Color=green")
    assert await form.page.get_by_text("Hovered").count() == 1
    assert manager.active_tab(instance.id) is front

    # A pause then text that never comes: the error says what was waited for, and how long.
    with pytest.raises(ActionError) as waited:
        await wait_for(form, time=0.2, text="Never there", timeout=0.3)
    assert str(waited.value).startswith(
        f"Waited 0.2 s, then 0.3 s for text 'Never there' to appear on tab {form.id}; it did not happen."
    )
    # Of two conditions, the error names the one that did not happen: it named both.
    with pytest.raises(ActionError) as half:
        await wait_for(form, text_gone="Not on the page", text="Never there", timeout=0.3)
    assert str(half.value).startswith(
        f"Waited until text 'Not on the page' was gone, then 0.3 s for text 'Never there' to appear on tab "
        f"{form.id}; it did not happen."
    ), str(half.value)
    # A script whose promise never settles: the page answers, so it is said as the script's doing
    # ("the page may be busy ... retry", and a retry waited the same way).
    with pytest.raises(ActionError) as pending:
        await evaluate(form, "() => new Promise(() => {})", timeout=0.3)
    assert pending.value.reason == "script_pending"
    assert error_text(pending.value) == (
        f"Evaluating on tab {form.id} did not finish within 0.3 s: the page answers, but the script's "
        "promise had not settled. Return without awaiting what may never come (or race it against a "
        "timer of your own), then retry."
    )
    # The same on an element: the element is there, so it is the script (it said the tab did not
    # respond in time, as for an element that is not there).
    button = ref_of(snap, 'button "Submit"')
    with pytest.raises(ActionError) as on_element:
        await evaluate(form, "(element) => new Promise(() => {})", ref=button, timeout=0.3)
    assert on_element.value.reason == "script_pending", error_text(on_element.value)
    assert str(on_element.value).startswith(
        f"Evaluating on {button} on tab {form.id} did not finish within 0.3 s: the page answers, but the "
        "script's promise had not settled."
    )
    # The server's advice: look at the page, not "the page may be busy or still loading" (a guess
    # that did not fit: the page had answered all along).
    assert error_text(half.value).endswith(
        f"Call browser_snapshot(tabId={form.id}) again to see the page as it is."
    )
    with pytest.raises(ActionError) as first:
        await wait_for(form, text_gone="Name=Ada", text="Never there", timeout=0.3)
    assert str(first.value).startswith(
        f"Waited 0.3 s for text 'Name=Ada' to disappear on tab {form.id} (the wait for text 'Never there' "
        "to appear comes after it); it did not happen."
    ), str(first.value)


async def test_a_screenshot_of_a_tab_behind_another_is_that_tab_and_activates_nothing(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    (home,) = await open_tabs(manager, instance, site.url("/"))
    snap = await home.snapshot()
    opened = await click(home, ref_of(snap, "Open A in new tab"))  # the new tab goes in front of home
    await manager.settle()

    whole = await asyncio.wait_for(screenshot(home), 10)
    element = await asyncio.wait_for(screenshot(home, ref=ref_of(snap, 'heading "Home"')), 10)
    page = await asyncio.wait_for(screenshot(home, full_page=True), 10)

    assert png_size(whole)[0] > 300
    assert png_size(element)[0] < png_size(whole)[0]
    assert png_size(page)[1] >= png_size(whole)[1]
    assert manager.active_tab(instance.id) is home
    assert not manager.info(manager.tab(opened.opened_tab_ids[0])).active


async def test_a_stale_ref_fails_at_once_even_with_a_long_playwright_timeout(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    (tab,) = await open_tabs(manager, instance, site.url("/page/a"))
    tab.page.set_default_timeout(30_000)
    snap = await tab.snapshot()
    button = ref_of(snap, "Say hi")

    await tab.page.reload()  # a new document: every ref of the old one is stale
    with pytest.raises(StaleRefError) as stale:
        await asyncio.wait_for(click(tab, button), 3)
    # The error names the tab to snapshot again (a server turns that into its own tool's name).
    assert stale.value.tab_id == tab.id and f"snapshot of tab {tab.id}" in str(stale.value)

    snap = await tab.snapshot()
    button = ref_of(snap, "Say hi")
    await tab.page.evaluate("document.querySelector('button').remove()")  # same document, element gone
    with pytest.raises(StaleRefError):
        await asyncio.wait_for(type_text(tab, button, "x"), 3)


async def test_an_argument_of_the_wrong_type_says_what_it_takes(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    # Python's own errors named an attribute: "'NoneType' object has no attribute 'strip'".
    (tab,) = await open_tabs(manager, instance, site.url("/page/a"))
    button = ref_of(await tab.snapshot(), "Say hi")
    tabs = [t.id for t in instance.tabs]
    none: Any = None  # what a caller without a type checker passes
    number: Any = 5
    for call, said in (
        (lambda: click(tab, none), "ref takes text, such as '3e5' from a snapshot; it was given None."),
        (lambda: click(tab, number), "ref takes text, such as '3e5' from a snapshot; it was given 5 (int)."),
        (lambda: type_text(tab, button, number), "text takes text, such as 'hello'; it was given 5 (int)."),
        (lambda: press_key(tab, none), "key takes text, such as 'Enter'; it was given None."),
        (
            lambda: evaluate(tab, number),
            "function takes text, such as '() => document.title'; it was given 5 (int).",
        ),
        (
            lambda: manager.new_tab(number),
            "url takes text, such as 'https://example.com/page'; it was given 5 (int).",
        ),
    ):
        with pytest.raises(TypeError) as wrong:
            await asyncio.wait_for(call(), 3)
        assert str(wrong.value) == said
    assert [t.id for t in instance.tabs] == tabs, "nothing was opened"
    assert (await click(tab, button)).opened_tab_ids == ()


async def test_a_ref_of_another_tab_is_refused_and_names_the_tab_it_came_from(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    first, second = await open_tabs(manager, instance, site.url("/page/a"), site.url("/page/b"))
    foreign = ref_of(await first.snapshot(), "Say hi")
    await second.snapshot()

    with pytest.raises(ForeignRefError) as error:
        await asyncio.wait_for(click(second, foreign), 3)
    assert f"belongs to tab {first.id}" in str(error.value)
    # In the library's words: a tab id is an MCP tool's argument ("Use it without a tab id").
    assert f"Act with it on tab {first.id}, the tab it belongs to" in str(error.value)
    # Of a tab that is not open (closed, or made up): no advice to use it there.
    await manager.close_tab(first.id)
    for gone in (foreign, "999e1"):
        with pytest.raises(StaleRefError) as stale:
            await asyncio.wait_for(click(second, gone), 3)
        assert "which is not open" in str(stale.value) and f"snapshot of tab {second.id}" in str(stale.value)


async def test_a_target_blank_click_returns_the_new_tab_registered_with_its_opener_and_not_active(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    (home,) = await open_tabs(manager, instance, site.url("/"))
    snap = await home.snapshot()
    since = manager.events.last_seq

    result = await click(home, ref_of(snap, "Open A in new tab"))
    await manager.settle()

    (new_id,) = result.opened_tab_ids
    new = manager.tab(new_id)
    assert new.opener_id == home.id
    opened = [e for e in manager.events.history(since=since) if e.type == "tab_opened"]
    assert [(e.tab_id, e.data["openerId"], e.data["cause"]) for e in opened] == [(new_id, home.id, "link")]
    assert manager.active_tab(instance.id) is home


@pytest.mark.parametrize(
    ("button", "modifiers"),
    # One modifier as text: its letters had been read as keys ("c", "t", ...), refused.
    [("middle", []), ("left", ["ControlOrMeta"]), ("left", "ctrl")],
    ids=["middle", "ctrl", "ctrl-as-text"],
)
async def test_a_middle_or_modifier_click_on_a_link_opens_a_tab_reported_with_its_opener(
    manager: TabManager, instance: Instance, site: LocalSite, button: str, modifiers: list[str] | str
) -> None:
    (home,) = await open_tabs(manager, instance, site.url("/"))
    snap = await home.snapshot()

    result = await click(home, ref_of(snap, "Go to C"), button=button, modifiers=modifiers)  # type: ignore[arg-type]
    await manager.settle()

    (new_id,) = result.opened_tab_ids
    assert manager.tab(new_id).opener_id == home.id
    assert home.url == site.url("/")  # the link opened elsewhere, the tab stayed
    assert manager.active_tab(instance.id) is home


async def test_follow_new_tab_activates_the_tab_the_click_opened(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    (home,) = await open_tabs(manager, instance, site.url("/"))
    snap = await home.snapshot()

    result = await click(home, ref_of(snap, "Open popup"), follow_new_tab=True)

    assert result.followed_tab_id == result.opened_tab_ids[0]
    assert manager.active_tab(instance.id).id == result.followed_tab_id


async def test_an_oauth_popup_flow_works_through_actions_on_the_popup_without_activating_it(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    (app,) = await open_tabs(manager, instance, site.url("/oauth/start"))
    (popup_id,) = (await click(app, ref_of(await app.snapshot(), "Sign in"))).opened_tab_ids
    popup = manager.tab(popup_id)
    await popup.page.wait_for_load_state()
    form = await popup.snapshot()

    await type_text(popup, ref_of(form, 'textbox "Username"'), "ada")
    await click(popup, ref_of(form, 'button "Authorize"'))

    await wait_for(app, text="Signed in as ada")
    assert popup.closed
    assert manager.active_tab(instance.id) is app


async def test_an_action_that_makes_its_own_tab_close_is_done_not_failed(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    (opener,) = await open_tabs(manager, instance, site.url("/page/a"))
    await opener.page.evaluate("() => { window.open('/page/b'); }")
    await wait_until(lambda: len(instance.tabs) == 2)
    popup = next(t for t in instance.tabs if t is not opener)
    await popup.ready()
    await popup.page.wait_for_load_state()

    # The script never settles: Playwright fails it when the page goes, as it fails a step still
    # in flight when a sign-in popup's submit loads a page that calls window.close().
    result = await evaluate(popup, "() => { window.close(); return new Promise(() => {}); }")

    assert result.value is None and result.tab_id == popup.id and not result.returned
    await wait_until(lambda: popup.closed)
    with pytest.raises(TabNotFoundError):
        await evaluate(popup, "() => 1")  # a closed tab is still an error

    # A click whose page closes the tab as it ends ("Close me": window.close() in its handler)
    # says so too: it said closed_itself=False, though its docstring names that very case.
    await opener.page.evaluate("() => { window.open('/close-self') }")
    await wait_until(lambda: len(instance.tabs) == 2)
    closing = next(t for t in instance.tabs if t is not opener)
    await closing.ready()
    clicked = await click(closing, ref_of(await closing.snapshot(), "Close me"))
    assert clicked.closed_itself and closing.is_gone


async def test_a_wait_on_a_tab_that_closes_itself_fails(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    # It returned as if the text had come (the close read as the action's own doing, as a
    # sign-in popup's submit that ends in window.close()), and a pause ended early, "done".
    (opener,) = await open_tabs(manager, instance, site.url("/page/a"))
    waits: tuple[dict[str, Any], ...] = ({"text": "Order confirmed"}, {"time": 5.0})
    for wait in waits:
        await opener.page.evaluate("() => { window.open('/page/b') }")
        await wait_until(lambda: len(instance.tabs) == 2)
        popup = next(t for t in instance.tabs if t is not opener)
        await popup.ready()
        await popup.page.evaluate("() => { setTimeout(() => window.close(), 300) }")
        with pytest.raises(ActionError) as failed:
            await wait_for(popup, timeout=5, **wait)
        assert failed.value.reason == "tab_closed", str(failed.value)
        assert f"on tab {popup.id} failed: tab {popup.id} closed" in str(failed.value)
        closing = popup
        await wait_until(lambda: closing.closed)  # noqa: B023 (awaited here, in this iteration)


async def test_a_screenshot_or_resize_given_a_wrong_value_is_refused_saying_what_it_takes(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    # image_type="gif" failed as an ActionError in Playwright's words ("type: expected one of
    # (png|jpeg|webp)": webp, which tabpilot does not take), as if the page were at fault;
    # resize(tab, "800", 600) failed in a comparison ("'<=' not supported ...").
    (tab,) = await open_tabs(manager, instance, site.url("/"))
    with pytest.raises(ValueError, match=r"^image_type takes 'png' or 'jpeg', not 'gif'\.$"):
        await screenshot(tab, image_type="gif")  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"^quality takes an int, the JPEG quality from 0 to 100; it was given '50'"
    ):
        await screenshot(tab, image_type="jpeg", quality="50")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^max_width takes an int, a number of pixels; it was given 200\.5"):
        await screenshot(tab, max_width=200.5)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"^width takes an int, a number of CSS pixels, 100 to 10000; it was given '800'"
    ):
        await resize(tab, "800", 600)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^height takes an int, .*; it was given True \(bool\)"):
        await resize(tab, 800, True)
    assert await resize(tab, 800, 600) == (800, 600)
    assert png_size(await screenshot(tab, max_width=400))[0] == 400


async def test_a_switch_or_option_of_another_type_is_refused_before_anything_is_done(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    # type_text(submit="no") typed and pressed Enter ("no" is true), follow_new_tab="no" followed
    # the tab; select_option(tab, ref, 5) and fill_form({ref: 5}) failed as "'int' object is not
    # iterable".
    (form,) = await open_tabs(manager, instance, site.url("/form"))
    snap = await form.snapshot()
    name, color = ref_of(snap, 'textbox "Name"'), ref_of(snap, 'combobox "Color"')
    no: Any = "no"  # values of another type than the API's: what a caller's bug passes
    yes: Any = "yes"
    one: Any = 1
    five: Any = 5
    mixed: Any = ["red", 2]
    number: Any = 42
    refused: list[tuple[Any, str]] = [
        (lambda: type_text(form, name, "Ada", submit=no), r"^submit takes True or False, not 'no'\.$"),
        (lambda: type_text(form, name, "Ada", slowly=one), r"^slowly takes True or False, not 1\.$"),
        (
            lambda: click(form, name, follow_new_tab=no),
            r"^follow_new_tab takes True or False \(or None\), not 'no'",
        ),
        (lambda: click(form, name, double_click=yes), r"^double_click takes True or False, not 'yes'"),
        (lambda: screenshot(form, full_page=yes), r"^full_page takes True or False, not 'yes'"),
        (
            lambda: select_option(form, color, five),
            r"^values takes an option's value or label, or a list .* given 5\.$",
        ),
        (lambda: select_option(form, color, mixed), r"^values takes .* given \['red', 2\]\.$"),
        (
            lambda: fill_form(form, {name: number}),
            rf"^The value for {name} takes text, True or False, or a list of options; it was given 42 \(int\)\.$",
        ),
    ]
    for call, said in refused:
        with pytest.raises(TypeError, match=said):
            await call()
    typed = await evaluate(form, "() => [document.querySelector('input').value, location.href]")
    assert typed.value == ["", site.url("/form")]  # nothing typed, nothing submitted
    assert (await select_option(form, color, "green")).value == ["green"]
    assert (await fill_form(form, {name: "Ada"})).value is not None


async def test_a_screenshot_that_waits_on_a_hidden_tab_says_so(
    manager: TabManager, instance: Instance, site: LocalSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A browser with windows (the user's Chrome over CDP) draws no picture of a hidden tab: the
    capture waited the whole timeout, then said the page may be busy. A headless browser draws
    every tab, so here the page says it is hidden and the capture is asked at once."""
    (tab,) = await open_tabs(manager, instance, site.url("/page/a"))
    monkeypatch.setattr(tabpilot._actions, "HIDDEN_CHECK", 0)
    await tab.page.evaluate(
        "() => Object.defineProperty(document, 'visibilityState', {get: () => 'hidden', configurable: true})"
    )
    with pytest.raises(ActionError) as hidden:
        await screenshot(tab)
    assert hidden.value.reason == "hidden"
    assert str(hidden.value).startswith(
        f"Screenshot of tab {tab.id} failed: tab {tab.id} is hidden (behind another"
    )
    await tab.page.evaluate(
        "() => Object.defineProperty(document, 'visibilityState', {get: () => 'visible'})"
    )
    assert png_size(await screenshot(tab))[0] > 0  # shown: the capture is waited for


async def test_a_click_that_opens_a_dialog_returns_at_once_and_the_tab_waits_for_it(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    dialogs, other = await open_tabs(manager, instance, site.url("/dialog"), site.url("/form"))
    snap = await dialogs.snapshot()

    result = await asyncio.wait_for(click(dialogs, ref_of(snap, "Confirm"), timeout=30), 3)

    assert result.dialog is not None and result.dialog.message == "sure?"
    with pytest.raises(DialogOpenError):
        await click(dialogs, ref_of(snap, "Alert"))
    other_snap = await other.snapshot()  # other tabs keep working
    await type_text(other, ref_of(other_snap, 'textbox "Name"'), "still works")
    await dialogs.handle_dialog(accept=True)
    await wait_for(dialogs, text="confirm: true")


async def test_a_dialog_answer_of_another_type_is_refused_and_the_dialog_stays_open(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    # handle_dialog(accept="no") accepted the confirm ("no" is true); prompt_text=5 failed in
    # Playwright's words, with the dialog gone from the tab's record though it was still open.
    (dialogs,) = await open_tabs(manager, instance, site.url("/dialog"))
    snap = await dialogs.snapshot()
    await click(dialogs, ref_of(snap, "Confirm"))
    no: Any = "no"
    five: Any = 5
    with pytest.raises(TypeError, match=r"^accept takes True or False, not 'no'\.$"):
        await dialogs.handle_dialog(accept=no)
    with pytest.raises(TypeError, match=r"^prompt_text takes text, such as 'Ada'; it was given 5 \(int\)\.$"):
        await dialogs.handle_dialog(accept=True, prompt_text=five)
    assert dialogs.dialog is not None and dialogs.dialog.message == "sure?"  # still open, still told
    await dialogs.handle_dialog(accept=False)
    await wait_for(dialogs, text="confirm: false")


async def test_an_element_that_cannot_be_clicked_fails_with_why_and_what_to_do(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    site.set_content(
        "/blocked",
        "<title>Blocked</title><button>Under</button><button disabled>Off</button>"
        '<div style="position:fixed;inset:0;background:#0008">Cookie banner</div>',
    )
    (tab,) = await open_tabs(manager, instance, site.url("/blocked"))
    snap = await tab.snapshot()

    # Said once the element has been so for a moment (2 s), not after the whole timeout.
    with pytest.raises(ActionError, match="covered by another element") as covered:
        await click(tab, ref_of(snap, "Under"), timeout=30)
    with pytest.raises(ActionError) as disabled:
        await click(tab, ref_of(snap, "Off"), double_click=True, timeout=30)
    assert covered.value.tab_id == tab.id and covered.value.reason == "covered"
    assert f"snapshot of tab {tab.id}" in str(covered.value)
    assert disabled.value.reason == "disabled"
    assert str(disabled.value).startswith(
        f"Double-clicking {ref_of(snap, 'Off')} on tab {tab.id} failed: element {ref_of(snap, 'Off')} is "
        "disabled (waited 2 s). If the page enables it later"
    ), str(disabled.value)
    # The clicks given up were aborted: enabled and uncovered now, neither element gets one later.
    await tab.page.evaluate(
        """() => {
          document.querySelector('div').remove();
          for (const b of document.querySelectorAll('button')) {
            b.disabled = false;
            b.addEventListener('click', () => document.title += ' ' + b.textContent);
          }
        }"""
    )
    await asyncio.sleep(1.5)  # Playwright retries a click every 0.5 s at most
    assert await tab.page.title() == "Blocked"


async def test_a_click_waits_for_an_element_the_page_enables_or_uncovers_a_moment_later(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    site.set_content(
        "/later",
        "<title>Later</title><button disabled>Send</button><button>Under</button>"
        '<div id="cover" style="position:fixed;inset:0;background:#0008">Loading</div>'
        "<script>for (const b of document.querySelectorAll('button')) b.onclick = () => document.title += ' ' "
        "+ b.textContent;</script>",
    )
    (tab,) = await open_tabs(manager, instance, site.url("/later"))
    snap = await tab.snapshot()

    # The page's timer starts now: each click waits for it (a second), as long as its timeout lets it.
    await tab.page.evaluate(
        "() => setTimeout(() => { document.querySelector('button').disabled = false; cover.remove(); }, 1000)"
    )
    await click(tab, ref_of(snap, "Send"))
    await click(tab, ref_of(snap, "Under"))
    assert await tab.page.title() == "Later Send Under"


async def test_wait_for_sees_text_appear_and_go_and_times_out_with_a_clear_message(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    (tab,) = await open_tabs(manager, instance, site.url("/form"))

    await wait_for(tab, text="Ready")  # added by the page after 500 ms
    await tab.page.evaluate("document.getElementById('ready').remove()")
    await wait_for(tab, text_gone="Ready", time=0.1)
    with pytest.raises(ActionError, match="did not happen"):
        await wait_for(tab, text="Never shown", timeout=0.3)
    with pytest.raises(ValueError, match="text, text_gone or time"):
        await wait_for(tab)


async def test_a_timeout_the_driver_cannot_time_is_refused_before_the_action(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    # Node's timers fire a wait over 2**31-1 ms at once: the click said its element was gone, the
    # navigation that it timed out. Negative, NaN and such waits are refused, and nothing is done.
    (tab,) = await open_tabs(manager, instance, site.url("/form"))
    snap = await tab.snapshot()
    submit = ref_of(snap, 'button "Submit"')
    for bad in (3e6, -1.0, float("nan"), float("inf"), 0):
        with pytest.raises(ValueError, match=r"^timeout: .* (not a positive|more than 2,000,000)"):
            await click(tab, submit, timeout=bad)
        with pytest.raises(ValueError, match=r"^timeout: "):
            await navigate(tab, "goto", site.url("/page/a"), timeout=bad)
        with pytest.raises(ValueError, match=r"^timeout: "):
            await wait_for(tab, text="Ready", timeout=bad)
        with pytest.raises(ValueError, match=r"^timeout: "):  # returned at once, as if settled
            await manager.settle(timeout=bad)
        with pytest.raises(ValueError, match=r"^timeout: "):
            await Telemetry().settle(timeout=bad)
    with pytest.raises(ValueError, match=r"^grace: "):
        await manager.settle(grace=-1)
    with pytest.raises(
        ValueError, match="action must be 'goto', 'back', 'forward', 'reload', not 'sideways'"
    ):
        await navigate(tab, "sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="time must be 0 to 30 seconds, not nan"):
        await asyncio.wait_for(wait_for(tab, time=float("nan")), 5)  # slept forever
    # Each was taken as another: 100 s waited 30, True 1 s; the others failed in Python's words.
    with pytest.raises(ValueError, match="time must be 0 to 30 seconds, not 100: to wait longer for a page"):
        await wait_for(tab, time=100)
    for wrong in (True, "2"):
        with pytest.raises(
            TypeError, match=f"time takes a number of seconds, such as 2; it was given {wrong!r}"
        ):
            await wait_for(tab, time=wrong)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text_gone takes text, such as 'Done'; it was given 5 \\(int\\)"):
        await wait_for(tab, text_gone=5)  # type: ignore[arg-type]
    result = tab.page.locator("#result")
    assert tab.url == site.url("/form") and await result.text_content() == ""
    with pytest.raises(ValueError, match=r"timeout_navigation: 3000000\.0 is more than 2,000,000 seconds"):
        BrowserOptions(timeout_navigation=3e6)
    # A good one still works, under the limit.
    await click(tab, submit, timeout=2_000_000)
    assert (await result.text_content() or "").startswith("Name=")


@pytest.mark.parametrize("in_front", [False, True])
async def test_a_click_on_a_tab_being_closed_says_the_tab_closed(
    manager: TabManager, instance: Instance, site: LocalSite, in_front: bool
) -> None:
    # It said the page changed and to take a new snapshot of a tab that no longer exists.
    back, front = await open_tabs(manager, instance, site.url("/form"), site.url("/form"))
    tab = front if in_front else back
    submit = ref_of(await tab.snapshot(), 'button "Submit"')
    clicking = asyncio.ensure_future(click(tab, submit))
    await manager.close_tab(tab.id)
    with pytest.raises(ActionError) as failed:
        await clicking
    assert failed.value.reason == "tab_closed", failed.value
    assert f"tab {tab.id} closed" in str(failed.value) and "snapshot" not in str(failed.value)


async def test_keys_and_scripts_act_on_the_tab_they_are_given(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    form, _front = await open_tabs(manager, instance, site.url("/form"), site.url("/page/a"))
    snap = await form.snapshot()
    name = ref_of(snap, 'textbox "Name"')

    await type_text(form, name, "abc")
    await press_key(form, "Backspace", ref=name)
    await press_key(form, "Tab")

    assert (await evaluate(form, "(el) => el.value", ref=name)).value == "ab"
    assert (await evaluate(form, "() => document.activeElement.id")).value == "color"
    with pytest.raises(ActionError, match="boom"):
        await evaluate(form, "() => { throw new Error('boom') }")
    with pytest.raises(ActionError, match="Unknown key"):
        await press_key(form, "NoSuchKey")


async def test_fill_form_checks_every_field_before_filling_any(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    site.set_content(
        "/two",
        '<input aria-label="Free"><input disabled aria-label="Off">'
        '<select aria-label="Size"><option>S</option><option>M</option></select>',
    )
    (tab,) = await open_tabs(manager, instance, site.url("/two"))
    snap = await tab.snapshot()
    free, off, size = (ref_of(snap, f'"{name}"') for name in ("Free", "Off", "Size"))
    with pytest.raises(ActionError) as disabled:
        await fill_form(tab, [(free, "typed"), (off, "nope")])
    assert disabled.value.reason == "disabled" and disabled.value.ref == off
    with pytest.raises(ActionError) as no_option:
        await fill_form(tab, [(free, "typed"), (size, "XL")])
    assert no_option.value.reason == "no_option" and "'S', 'M'" in str(no_option.value)
    assert (await evaluate(tab, "() => document.querySelector('input').value")).value == ""
    await fill_form(tab, [(free, "typed"), (size, "M")])
    both = "() => document.querySelector('input').value + document.querySelector('select').value"
    assert (await evaluate(tab, both)).value == "typedM"
    # A dict, Python's form for this, failed with "too many values to unpack".
    await fill_form(tab, {free: "dict", size: "S"})
    assert (await evaluate(tab, both)).value == "dictS"
    with pytest.raises(TypeError, match=r"fields takes \(ref, value\) pairs"):
        await fill_form(tab, [free, "typed"])  # type: ignore[list-item]


async def test_one_path_or_value_given_as_a_string_is_one_not_its_characters(
    manager: TabManager, instance: Instance, site: LocalSite, tmp_path: Path
) -> None:
    # upload_files(tab, ref, "/tmp/a.txt") uploaded each character as a file path; an options
    # tuple given one string split it the same way.
    upload = tmp_path / "notes.txt"
    upload.write_text("n")
    site.set_content("/upload", '<input type="file" aria-label="Notes" multiple>')
    (tab,) = await open_tabs(manager, instance, site.url("/upload"))
    snap = await tab.snapshot()
    await upload_files(tab, ref_of(snap, "Notes"), str(upload))
    names = await evaluate(tab, "() => [...document.querySelector('input').files].map((f) => f.name)")
    assert names.value == ["notes.txt"]
    with pytest.raises(TypeError, match=r"browser_args takes a tuple of strings, not one string"):
        BrowserOptions(browser_args="--mute-audio")  # type: ignore[arg-type]


async def test_values_out_of_their_range_are_refused_not_taken_for_another(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    # Each was taken: dialogs="acept" as "report", depth=-1 as an empty snapshot, pin "no" as
    # pinned, a max_tabs of 0 (the constructor refuses it) as a limit no tab could open under.
    (tab,) = await open_tabs(manager, instance, site.url("/page/a"))
    snap = await tab.snapshot()
    with pytest.raises(ValueError, match="dialogs must be 'report' or 'accept', not 'acept'"):
        await click(tab, ref_of(snap, "button"), dialogs="acept")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="depth must be a whole number from 1"):
        await tab.snapshot(depth=-1)
    with pytest.raises(TypeError, match="pinned must be True or False, not 'no'"):
        manager.pin(tab.id, "no")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tabs must be a whole number of at least 1, not 0"):
        manager.max_tabs = 0
    assert manager.max_tabs >= 1 and not manager.info(tab).pinned


async def test_arguments_that_were_ignored_or_taken_as_no_limit_are_refused(
    manager: TabManager, instance: Instance, site: LocalSite, tmp_path: Path
) -> None:
    # A url given to a reload was ignored (the tab reloaded its own page); a missing file to
    # upload failed in Playwright's words (os.stat), none emptied the input, and an empty
    # selection cleared it; a launch timeout of 0 meant no limit.
    site.set_content(
        "/forms",
        '<input type="file" aria-label="Notes"><select aria-label="Pick"><option>a</option></select>',
    )
    (tab,) = await open_tabs(manager, instance, site.url("/forms"))
    snap = await tab.snapshot()
    with pytest.raises(ValueError, match=r"reload takes no url .*: use goto to load a URL"):
        await navigate(tab, "reload", site.url("/page/b"))
    with pytest.raises(ValueError, match="is not a readable file"):
        await upload_files(tab, ref_of(snap, "Notes"), [str(tmp_path / "missing.txt")])
    with pytest.raises(ValueError, match="paths must name at least one file"):
        await upload_files(tab, ref_of(snap, "Notes"), [])
    with pytest.raises(ValueError, match="values must name at least one option"):
        await select_option(tab, ref_of(snap, "Pick"), [])
    with pytest.raises(ValueError, match="timeout: 0 "):
        await manager.launch(timeout=0)
    assert tab.url == site.url("/forms")


async def test_a_ref_outside_a_subtree_being_read_at_the_same_time_still_works(
    manager: TabManager, instance: Instance, site: LocalSite
) -> None:
    # A subtree snapshot replaces Playwright's ref map with the subtree's until tabpilot reads the
    # whole page again: a ref outside it checked meanwhile (an action called at the same time) was
    # said to match no element any more, and was then refused as not in the latest snapshot.
    site.set_content(
        "/parts",
        "<nav>"
        + "".join(f"<a href='#l{i}'>Link {i}</a>" for i in range(200))
        + "</nav><main><p>Target</p></main>",
    )
    tab = await manager.new_tab(site.url("/parts"), instance_id=instance.id)
    snap = await tab.snapshot()
    nav, target = ref_of(snap, "navigation"), ref_of(snap, "paragraph")

    async def read_target(delay: float) -> object:
        await asyncio.sleep(delay)
        return (await evaluate(tab, "(p) => p.textContent", ref=target)).value

    for attempt in range(20):  # at once, and a moment after the subtree's read began
        part, value = await asyncio.gather(tab.snapshot(ref=nav), read_target(attempt % 10 / 1000))
        assert value == "Target"
        assert 'link "Link 199"' in part.text and "Target" not in part.text
