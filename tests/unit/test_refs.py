"""Refs carry their tab, and links and buttons lose the `[cursor=pointer]` their role already says."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tabpilot import parse_ref, scope_snapshot
from tabpilot._downloads import _private_folder
from tabpilot._refs import FrameRefs, has_field_values, mask_passwords

POINTER = " [cursor=pointer]"


def _by_lines(tab_id: int, snapshot: str) -> str:
    """The rule, line by line: a link's or button's line loses its first pointer marker."""
    lines = [
        line.replace(POINTER, "", 1) if re.match(r"\s*- (?:link|button)\b", line) else line
        for line in snapshot.split("\n")
    ]
    return "\n".join(lines).replace("[ref=", f"[ref={tab_id}")


def test_links_and_buttons_lose_the_pointer_and_other_elements_keep_it() -> None:
    snapshot = (
        "- generic [ref=e1]:\n"
        '  - link "Open A" [ref=e2] [cursor=pointer]:\n'
        "    - /url: /page/a\n"
        "    - img [ref=e3] [cursor=pointer]\n"
        '  - button "Go [cursor=pointer]" [ref=e4] [cursor=pointer]\n'
        "  - generic [ref=e5] [cursor=pointer]: Clicky div\n"
        '  - linkish "x" [ref=e6] [cursor=pointer]'
    )
    text, refs = scope_snapshot(3, snapshot)
    assert text == (
        "- generic [ref=3e1]:\n"
        '  - link "Open A" [ref=3e2]:\n'
        "    - /url: /page/a\n"
        "    - img [ref=3e3] [cursor=pointer]\n"
        '  - button "Go" [ref=3e4] [cursor=pointer]\n'
        "  - generic [ref=3e5] [cursor=pointer]: Clicky div\n"
        '  - linkish "x" [ref=3e6] [cursor=pointer]'
    )
    assert refs == {"e1", "e2", "e3", "e4", "e5", "e6"}


def test_any_snapshot_text_follows_the_line_rule() -> None:
    pieces = [
        "- link",
        "- button",
        "- generic",
        "  ",
        "\n",
        POINTER,
        ' "n"',
        " [ref=e1]",
        ":",
        "x",
        "linked",
        "\t",
    ]
    rng = random.Random(15)
    for _ in range(5000):
        snapshot = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert scope_snapshot(7, snapshot)[0] == _by_lines(7, snapshot), repr(snapshot)


def test_a_ref_is_read_with_the_digits_0_to_9_only() -> None:
    # `１e4` (a full-width 1) was read as tab 1's e4, while tabId "２" is refused.
    assert parse_ref(" 12f3e45 ") == (12, "f3e45")
    assert parse_ref("e7") == (None, "e7")
    for lookalike in ("１e4", "1e٤", "e¹"):
        with pytest.raises(ValueError, match="is not an element ref"):
            parse_ref(lookalike)


def test_a_ref_of_a_tab_id_too_large_for_any_tab_says_so_and_is_not_echoed_whole() -> None:
    # Python's int() of 4,300 digits or more raised its own words ("Exceeds the limit (4300 digits)
    # for integer string conversion"), and a 100k non-ref was echoed whole.
    with pytest.raises(ValueError) as refused:
        parse_ref("9" * 5000 + "e1")
    assert "names no open tab: no tab has an id that large" in str(refused.value)
    assert len(str(refused.value)) < 200, len(str(refused.value))
    with pytest.raises(ValueError) as refused:
        parse_ref("x" * 100_000)
    assert "(100000 characters) is not an element ref" in str(refused.value), str(refused.value)[:300]
    assert parse_ref("123456789012345678e1") == (123456789012345678, "e1")


def test_an_iframes_next_page_gets_frame_names_the_tab_has_not_shown_before() -> None:
    # Playwright's f1e3 is "Delete" on the iframe's first page and "Confirm purchase" on its next.
    names = FrameRefs()
    first = '- generic [ref=e1]:\n  - iframe [ref=e2]:\n    - button "Delete" [ref=f1e3]'
    assert names.shown(first) == first  # nothing moved: Playwright's names as they are
    assert names.playwright_ref("f1e3") == "f1e3" and names.playwright_ref("e2") == "e2"
    names.frames_moved()
    assert names.playwright_ref("f1e3") is None and names.moved_on("f1e3")
    assert names.playwright_ref("e2") == "e2" and not names.moved_on("e2")  # the page's own stay
    second = first.replace("Delete", "Confirm purchase")
    shown = names.shown(second)
    assert shown == second.replace("f1e3", "f2e3") and names.playwright_ref("f2e3") == "f1e3"
    # Playwright's own f2 (the page's next document, say) is then shown under another name.
    names.document_changed()
    third = '- generic [ref=f2e1]:\n  - iframe [ref=f2e2]:\n    - button "Keep" [ref=f3e2]'
    assert (
        names.shown(third) == '- generic [ref=f4e1]:\n  - iframe [ref=f4e2]:\n    - button "Keep" [ref=f3e2]'
    )
    assert names.playwright_ref("f4e1") == "f2e1" and names.playwright_ref("f2e3") is None
    # Only an iframe's refs are told as of its earlier page; the page's own after it navigated are not.
    assert names.moved_on("f1e3") and not names.moved_on("e2")
    names.document_changed()
    assert not names.moved_on("f4e1")


def test_an_iframe_that_moves_while_the_page_is_read_leaves_no_name_that_could_be_given_again() -> None:
    # The iframe commits its next page after Playwright read the old one: the names that read gets
    # would also be the next page's, so they are retired at once.
    names = FrameRefs()
    before = names.moves
    names.frames_moved()  # heard while the snapshot was on its way
    read = '- generic [ref=e1]:\n  - iframe [ref=e2]:\n    - button "Delete" [ref=f1e3]'
    assert names.shown(read, moves=before) == read
    assert names.playwright_ref("f1e3") is None and names.moved_on("f1e3")
    assert names.shown(read.replace("Delete", "Buy")) == read.replace("Delete", "Buy").replace("f1e3", "f2e3")


def test_a_password_fields_value_is_hidden_however_the_snapshot_quotes_it() -> None:
    snapshot = "\n".join(
        [
            "- generic [ref=e1]:",
            '  - textbox "Password" [active] [ref=e2]: "a: b"',
            '  - textbox "Again \\"x\\" [y]" [ref=e3]: two spaces',
            '  - textbox [ref=e4]: "tab\\there"',
            '  - textbox "Name" [ref=e5]: Ada',
            "  - paragraph [ref=e6]: a: b",  # the page's own text, not a field's value
            '  - textbox "Empty" [ref=e7]',
        ]
    )
    assert has_field_values(snapshot) and not has_field_values('- textbox "Empty" [ref=e7]')

    masked = mask_passwords(snapshot, ["a: b", "two  spaces", "tab\there"])

    assert masked.splitlines()[1:] == [
        '  - textbox "Password" [active] [ref=e2]: (password, 4 characters)',
        '  - textbox "Again \\"x\\" [y]" [ref=e3]: (password, 11 characters)',
        "  - textbox [ref=e4]: (password, 8 characters)",
        '  - textbox "Name" [ref=e5]: Ada',
        "  - paragraph [ref=e6]: a: b",
        '  - textbox "Empty" [ref=e7]',
    ]
    assert mask_passwords(snapshot, []) == snapshot


def test_the_default_downloads_folder_is_the_users_alone(tmp_path: Path) -> None:
    # In the temp folder every user writes to: one another user made, or can write to, would let
    # them read the agent's downloads or swap a file being saved.
    mine = tmp_path / "mine"
    _private_folder(mine)
    assert mine.stat().st_mode & 0o777 == 0o700
    open_to_all = tmp_path / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    with pytest.raises(PermissionError, match="not this user's own folder"):
        _private_folder(open_to_all)
