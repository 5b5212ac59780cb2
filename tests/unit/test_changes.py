"""What an action's response says changed on the page (`changed_lines`)."""

from __future__ import annotations

from tabpilot.server.response import changed_lines, cut_snapshot

PAGE = """- generic [active] [ref=e1]:
  - heading "Form" [level=1] [ref=e2]
  - textbox "Name" [ref=e3]
  - button "Send" [ref=e4]"""


def test_a_changed_line_is_shown_in_its_new_form_and_not_counted_as_removed() -> None:
    named = PAGE.replace('textbox "Name" [ref=e3]', 'textbox "Full name" [ref=e3]')
    assert changed_lines(PAGE, named) == (['  - textbox "Full name" [ref=e3]'], [])


def test_a_line_that_only_lost_the_focus_is_left_out_the_one_that_has_it_now_is_shown() -> None:
    # The page's root, focused after a load, read as the parent of whatever changed below it.
    focused = PAGE.replace("- generic [active] [ref=e1]", "- generic [ref=e1]").replace(
        'textbox "Name" [ref=e3]', 'textbox "Name" [active] [ref=e3]'
    )
    assert changed_lines(PAGE, focused) == (['  - textbox "Name" [active] [ref=e3]'], [])
    # [active] comes before other marks ([level=1], [pressed]): a line that lost it and changed
    # otherwise too is shown.
    heading = '- heading "Form" [active] [level=1] [ref=e2]'
    assert changed_lines(heading, '- heading "Form" [level=1] [ref=e2]') == ([], [])
    assert changed_lines(heading, '- heading "Sent" [level=1] [ref=e2]') == (
        ['- heading "Sent" [level=1] [ref=e2]'],
        [],
    )


def test_lines_that_are_gone_are_given() -> None:
    without_button = "\n".join(PAGE.splitlines()[:-1])
    assert changed_lines(PAGE, without_button) == ([], ['  - button "Send" [ref=e4]'])
    # Three elements make way for a status: the three are gone, whatever their place.
    collapsed = "- generic [active] [ref=e1]:\n  - status: Sent"
    added, removed = changed_lines(PAGE, collapsed)
    assert added == ["  - status: Sent"] and removed == [
        '  - heading "Form" [level=1] [ref=e2]',
        '  - textbox "Name" [ref=e3]',
        '  - button "Send" [ref=e4]',
    ]


def test_the_line_that_went_is_named_not_the_one_in_its_place() -> None:
    # Alpha removed and Beta renamed: "Removed" named Beta (paired by place), never Alpha.
    before = "- list [ref=e1]:\n  - listitem [ref=e2]: Alpha\n  - listitem [ref=e3]: Beta"
    after = "- list [ref=e1]:\n  - listitem [ref=e3]: Beta (edited)"
    assert changed_lines(before, after) == (
        ["  - listitem [ref=e3]: Beta (edited)"],
        ["  - listitem [ref=e2]: Alpha"],
    )
    # A line without a ref whose text changed is shown changed; one that went, as removed.
    assert changed_lines("- text: 3 items", "- text: 2 items") == (["- text: 2 items"], [])
    assert changed_lines("- a [ref=e1]\n- text: note", "- a [ref=e1]") == ([], ["- text: note"])


def test_an_unchanged_page_has_no_changes() -> None:
    assert changed_lines(PAGE, PAGE) == ([], [])


def test_a_snapshot_over_the_limit_keeps_its_first_whole_lines_and_names_the_depth_that_fits() -> None:
    tree = "- list [ref=e1]:\n" + "\n".join(
        f'  - listitem "Item {i}" [ref=e{i + 2}]:\n    - text: {i}' for i in range(50)
    )
    assert cut_snapshot(tree, len(tree)) is None
    cut = cut_snapshot(tree, 1_000)
    assert cut is not None
    assert len(cut.text) <= 1_000 and tree.startswith(cut.text + "\n")
    assert cut.shown_lines == len(cut.text.splitlines()) and cut.total_lines == 101
    # Its top level alone (the list and its 50 items, about 1,600 characters) is over 1,000.
    assert cut.depth is None
    roomy = cut_snapshot(tree, 2_000)
    assert roomy is not None and roomy.depth == 1


def test_a_cut_tree_shows_a_long_line_shortened_keeping_its_ref() -> None:
    name = "N" * 1_000
    tree = (
        f'- list [ref=e1]:\n  - button "{name}" [ref=e2]\n  - text: {"t" * 1_000}\n  - link "After" [ref=e3]'
    )
    cut = cut_snapshot(tree, 1_600)
    assert cut is not None and cut.shown_lines == cut.total_lines == 4 and cut.shortened == 2
    button, text, link = cut.text.splitlines()[1:]
    # Cut at 200 characters (the least a line keeps): the ref after a long name is kept.
    assert button == f'  - button "{"N" * 188}… [ref=e2] (814 more characters)'
    assert text == f"  - text: {'t' * 190}… (810 more characters)"
    assert link == '  - link "After" [ref=e3]'
