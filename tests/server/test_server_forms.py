"""The tools users reach for in their first hour, through a real MCP client on a real Chromium:
fill a form, upload files, drag and drop, resize, screenshot formats and sizes, save the storage
state; secrets typed from placeholders and never shown; tool groups (`--caps`). Each page tool
works on a background tab."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import ImageContent

from support import data, error, ok, poll, ref_of, refs_of, result_of, section, tab_line, text
from tabpilot import Secrets
from tabpilot.demo.site import LocalSite
from tabpilot.server.tools.screenshot import image_size


async def background_tab(mcp: Client, url: str) -> int:
    opened = ok(await mcp.call_tool("browser_tabs", {"action": "new", "url": url, "background": True}))
    tab_id: int = result_of(opened)["tabId"]
    return tab_id


async def snapshot(mcp: Client, tab_id: int) -> str:
    snap: str = data(ok(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab_id})))["snapshot"]
    return snap


async def page_value(mcp: Client, tab_id: int, function: str) -> Any:
    return result_of(ok(await mcp.call_tool("browser_evaluate", {"function": function, "tabId": tab_id})))[
        "value"
    ]


async def active_tab(mcp: Client) -> int:
    tab_id: int = result_of(ok(await mcp.call_tool("browser_tabs", {"action": "list"})))["activeTabId"]
    return tab_id


async def test_fill_form_fills_every_kind_of_field_of_a_background_tab(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        front = await active_tab(mcp)
        form = await background_tab(mcp, site.url("/form"))
        snap = await snapshot(mcp, form)
        name, color, subscribe, message = refs_of(
            snap, 'textbox "Name"', 'combobox "Color"', 'checkbox "Subscribe"', 'textbox "Message"'
        )
        filled = ok(
            await mcp.call_tool(
                "browser_fill_form",
                {
                    "fields": [
                        {"ref": name, "value": "Ada"},
                        {"ref": color, "value": "blue"},
                        {"ref": subscribe, "value": True},
                        {"ref": message, "value": "Hello"},
                    ]
                },
            )
        )
        assert section(filled, "Result").startswith(
            f"Filled 4 fields on tab {form}: {name} = 'Ada'; {color} = 'blue'; {subscribe} = checked; "
            f"{message} = 'Hello'."
        ), section(filled, "Result")
        # A checkbox given "false" is said as unchecked (the answer quoted 'false'), as it was set.
        off = ok(await mcp.call_tool("browser_fill_form", {"fields": [{"ref": subscribe, "value": "false"}]}))
        assert f"{subscribe} = unchecked." in section(off, "Result"), section(off, "Result")
        ok(await mcp.call_tool("browser_fill_form", {"fields": [{"ref": subscribe, "value": "true"}]}))
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, 'button "Submit"')}))
        shown = await page_value(mcp, form, "() => document.getElementById('result').textContent")
        assert shown == "Name=Ada; Color=blue; Subscribe=yes; Message=Hello"
        assert await active_tab(mcp) == front  # the background tab was never activated

        # One bad field: nothing is filled, and the error names it.
        refused = error(
            await mcp.call_tool(
                "browser_fill_form",
                {"fields": [{"ref": name, "value": "Bob"}, {"ref": color, "value": "purple"}]},
            )
        )
        assert "purple" in refused
        assert await page_value(mcp, form, "() => document.getElementById('name').value") == "Ada"
        # Each of these had been taken without a word: an unknown key (dropped), an empty choice
        # (it cleared the select), 100k characters (browser_type takes 20,000; the answer was 100k).
        for field, says in (
            ({"ref": name, "value": "Bob", "extra": 1}, "unknown key 'extra' in a field: give ref and value"),
            ({"ref": color, "value": []}, f"The value for {color} is an empty list: give the option"),
            ({"ref": message, "value": "x" * 100_000}, "at most 20000 can be filled in one call"),
        ):
            said = error(await mcp.call_tool("browser_fill_form", {"fields": [field]}))
            assert says in said and len(said) < 2_000, said[:500]
        assert await page_value(mcp, form, "() => document.getElementById('color').value") == "blue"


async def test_a_value_of_the_wrong_kind_for_a_field_is_refused_saying_what_the_field_takes(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        form = await background_tab(mcp, site.url("/form"))
        snap = await snapshot(mcp, form)
        name, color, subscribe, submit = refs_of(
            snap, 'textbox "Name"', 'combobox "Color"', 'checkbox "Subscribe"', 'button "Submit"'
        )

        async def refused(tool: str, arguments: dict[str, Any]) -> str:
            return error(await mcp.call_tool(tool, {**arguments, "tabId": form}))

        typed = await refused("browser_type", {"ref": subscribe, "text": "yes"})
        assert f"element {subscribe} is a checkbox, not a text field. Click it to change it" in typed
        assert (
            f"element {submit} is a button, not a text field. Click it, or use a ref of the field you meant "
            f"(call browser_snapshot(tabId={form}) to find it)."
        ) in await refused("browser_type", {"ref": submit, "text": "yes"})
        assert "a form fill takes true or false for it" in typed
        # The label around the checkbox: Playwright would act on the checkbox, so it is judged as one.
        label = re.search(r'- generic \[ref=(\w+)\]:\n\s+- checkbox "Subscribe"', snap)
        assert label is not None
        typed = await refused("browser_type", {"ref": label[1], "text": ""})
        assert f"element {label[1]} is a checkbox, not a text field. Click it to change it" in typed
        assert (
            f"element {name} is a text field, not a drop-down list. Type text into it instead."
            in await refused("browser_select_option", {"ref": name, "values": ["red"]})
        )
        both = await refused("browser_select_option", {"ref": color, "values": ["red", "blue"]})
        assert (
            f"element {color} takes one option (it is not a multiple-choice list); 2 were given. Give one value."
            in both
        )
        fields: list[dict[str, Any]] = [{"ref": name, "value": "Bob"}, {"ref": subscribe, "value": "maybe"}]
        assert f"element {subscribe} is a checkbox, not a text field." in await refused(
            "browser_fill_form", {"fields": fields}
        )
        fields = [{"ref": name, "value": True}]
        assert f"element {name} is a text field: it takes text, not true or false." in await refused(
            "browser_fill_form", {"fields": fields}
        )
        # Nothing was filled, ticked or selected.
        state = "() => { const f = (id) => document.getElementById(id); return [f('name').value, f('color').value, f('subscribe').checked] }"
        assert await page_value(mcp, form, state) == ["", "red", False]


ODD_FIELDS = """<!doctype html><title>Odd fields</title>
<label>Due <input type=date id=due value=2026-01-02></label>
<label>Count <input type=number id=count></label>
<label>Agree <input type=checkbox id=agree></label>
<a href="#top">Top</a>"""


async def test_text_a_date_or_number_field_would_drop_is_refused_and_true_false_text_ticks_a_checkbox(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content("/odd-fields", ODD_FIELDS)
    async with connect() as mcp:
        tab = await background_tab(mcp, site.url("/odd-fields"))
        snap = await snapshot(mcp, tab)
        due, count, agree, top = refs_of(
            snap, 'textbox "Due"', 'spinbutton "Count"', 'checkbox "Agree"', 'link "Top"'
        )
        values = "() => [due.value, count.value, agree.checked]"

        # The browser empties a date field given 'tomorrow' (Playwright says nothing): refused first.
        refused = error(await mcp.call_tool("browser_type", {"ref": due, "text": "tomorrow"}))
        assert (
            f"element {due} is a date field, which takes a date as YYYY-MM-DD (e.g. 2026-11-24), not 'tomorrow'. "
            "Give the value in that form (the field was left as it was)." in refused
        )
        fields: list[dict[str, Any]] = [{"ref": due, "value": "2026-03-04"}, {"ref": count, "value": "12abc"}]
        refused = error(await mcp.call_tool("browser_fill_form", {"fields": fields}))
        assert (
            f"element {count} is a number field, which takes a number (e.g. 42 or -3.5), not '12abc'."
            in refused
        )
        assert await page_value(mcp, tab, values) == ["2026-01-02", "", False]
        # Keys typed one by one go through the field's own editor, as a person types a date.
        ok(await mcp.call_tool("browser_type", {"ref": due, "text": "12312025", "slowly": True}))
        assert await page_value(mcp, tab, values) == ["2025-12-31", "", False]

        # 'true' and 'false' as text tick and clear a checkbox, as true and false do.
        fields = [
            {"ref": due, "value": "2026-03-04"},
            {"ref": count, "value": "12.5"},
            {"ref": agree, "value": "True"},
        ]
        ok(await mcp.call_tool("browser_fill_form", {"fields": fields}))
        assert await page_value(mcp, tab, values) == ["2026-03-04", "12.5", True]
        ok(await mcp.call_tool("browser_fill_form", {"fields": [{"ref": agree, "value": "false"}]}))
        assert await page_value(mcp, tab, values) == ["2026-03-04", "12.5", False]

        # An element that is no field at all: said in tabpilot's words, not Playwright's.
        assert f"element {top} is not a text field (an input, text area or editable area)." in error(
            await mcp.call_tool("browser_type", {"ref": top, "text": "x"})
        )
        assert f"element {top} is not a drop-down list (a <select>)." in error(
            await mcp.call_tool("browser_select_option", {"ref": top, "values": ["x"]})
        )
        unchecked = error(await mcp.call_tool("browser_fill_form", {"fields": [{"ref": top, "value": True}]}))
        assert f"element {top} is not a checkbox or radio button (true and false" in unchecked, unchecked
        assert "Error:" not in unchecked


async def test_text_longer_than_a_fields_maxlength_is_refused_not_cut(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The browser keeps the first maxlength characters: "Typed 'AB-1234-XY'" of a field that held
    # 'AB-12'. (An emoji is two of the page's characters.)
    site.set_content(
        "/short", '<input aria-label="Code" maxlength="5"><textarea aria-label="Bio" maxlength="4">'
    )
    async with connect() as mcp:
        tab = await background_tab(mcp, site.url("/short"))
        code, bio = refs_of(await snapshot(mcp, tab), 'textbox "Code"', 'textbox "Bio"')
        for tool, arguments, ref in (
            ("browser_type", {"ref": code, "text": "AB-1234-XY"}, code),
            ("browser_type", {"ref": code, "text": "AB-1234-XY", "slowly": True}, code),
            (
                "browser_fill_form",
                {"fields": [{"ref": code, "value": "AB-12"}, {"ref": bio, "value": "hi 👋🏽"}]},
                bio,
            ),
        ):
            refused = error(await mcp.call_tool(tool, arguments))
            assert f"element {ref} takes at most" in refused, refused
            assert "(its maxlength), fewer than the text has" in refused, refused
            assert "Shorten the text to fit (the field was left as it was)." in refused, refused
        values = "() => [...document.querySelectorAll('input, textarea')].map(e => e.value)"
        assert await page_value(mcp, tab, values) == ["", ""]
        ok(
            await mcp.call_tool(
                "browser_fill_form",
                {"fields": [{"ref": code, "value": "AB-12"}, {"ref": bio, "value": "hi👋"}]},
            )
        )
        assert await page_value(mcp, tab, values) == ["AB-12", "hi👋"]


async def test_typing_slowly_into_a_paragraph_of_a_rich_text_editor_types_there(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The paragraph was emptied, then focused (it takes no focus: the keys went to the page): its
    # text was gone, nothing typed, and the answer said "Typed".
    site.set_content(
        "/editor", "<div contenteditable='true' aria-label='Editor'><p>First words</p><p>Second</p></div>"
    )
    async with connect() as mcp:
        tab = await background_tab(mcp, site.url("/editor"))
        first = ref_of(await snapshot(mcp, tab), ": First words")
        ok(await mcp.call_tool("browser_type", {"ref": first, "text": "abc", "slowly": True}))
        html = "() => document.querySelector('[contenteditable]').innerHTML"
        assert await page_value(mcp, tab, html) == "<p>abc</p><p>Second</p>"


async def test_refs_of_two_tabs_in_one_call_are_refused_saying_so(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Each ref alone would be refused as "not this tab's, leave tabId out", which no tabId fixes.
    site.set_content("/two", '<title>Two</title><input aria-label="name"><div draggable="true">item</div>')
    async with connect() as mcp:
        first, second = (
            await background_tab(mcp, site.url("/two")),
            await background_tab(mcp, site.url("/two")),
        )
        one, two = await snapshot(mcp, first), await snapshot(mcp, second)
        fields = [
            {"ref": ref_of(one, "name"), "value": "a"},
            {"ref": ref_of(two, "name"), "value": "b"},
        ]
        refused = error(await mcp.call_tool("browser_fill_form", {"fields": fields}))
        assert refused.startswith(
            f"Refs {ref_of(one, 'name')}, {ref_of(two, 'name')} are on 2 tabs ({first}, {second}): one call "
            "acts on one tab. Use refs from one tab's snapshot"
        ), refused
        assert "tabId" not in refused
        for tab in (first, second):  # nothing was filled
            assert await page_value(mcp, tab, "() => document.querySelector('input').value") == ""
        dragged = error(
            await mcp.call_tool(
                "browser_drag", {"startRef": ref_of(one, "item"), "endRef": ref_of(two, "name")}
            )
        )
        assert f"are on 2 tabs ({first}, {second}): one call acts on one tab" in dragged


async def test_file_upload_takes_files_inside_the_allowed_roots_only(
    connect: Callable[..., Client], site: LocalSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.set_content(
        "/upload",
        '<input type="file" aria-label="Files" multiple '
        "onchange=\"document.title = [...this.files].map(f => f.name + ':' + f.size).join(',')\">",
    )
    inside = tmp_path / "allowed"
    inside.mkdir()
    (inside / "a.txt").write_text("hello")
    (inside / "b.txt").write_text("hi")
    outside = tmp_path / "secret.txt"
    outside.write_text("do not send")
    async with connect(allowed_file_roots=(str(inside),)) as mcp:
        tab = await background_tab(mcp, site.url("/upload"))
        field = ref_of(await snapshot(mcp, tab), "Files")
        paths = [str(inside / "a.txt"), str(inside / "b.txt")]
        uploaded = ok(await mcp.call_tool("browser_file_upload", {"ref": field, "paths": paths}))
        assert "a.txt, b.txt" in section(uploaded, "Result")
        assert await page_value(mcp, tab, "() => document.title") == "a.txt:5,b.txt:2"

        for path in (str(outside), str(inside / ".." / "secret.txt")):
            refused = error(await mcp.call_tool("browser_file_upload", {"ref": field, "paths": [path]}))
            assert "outside the folders files may be uploaded from" in refused and str(inside) in refused
            # What to do next: a path inside, or a server started with another root.
            assert "Use a path inside it." in refused and "--allowed-file-root DIR" in refused
        missing = error(
            await mcp.call_tool("browser_file_upload", {"ref": field, "paths": [str(inside / "nope.txt")]})
        )
        # Which of "no such file, a folder, or not readable" it is, and what to give instead.
        nothing = f"'{inside / 'nope.txt'}' is not a readable file: nothing is there. Give the path of a file inside"
        assert f"{nothing} {inside}." in missing, missing
        (inside / "sub").mkdir()
        monkeypatch.chdir(inside)
        sub = error(await mcp.call_tool("browser_file_upload", {"ref": field, "paths": ["sub"]}))
        assert f"'sub' is not a readable file ('{inside / 'sub'}'): it is a folder." in sub, sub
        assert f"inside {inside}; a relative path starts at {inside}." in sub, sub
        empty = error(await mcp.call_tool("browser_file_upload", {"ref": field, "paths": [""]}))
        assert "An empty path names no file" in empty and "outside" not in empty
        # The allowed folder itself is no file (it was "outside the folders"); a path too long for
        # the file system answered Python's OSError with the whole path.
        folder = error(await mcp.call_tool("browser_file_upload", {"ref": field, "paths": [str(inside)]}))
        assert "is the folder files may be uploaded from, not a file in it" in folder, folder
        long = str(inside / ("y" * 5000))
        too_long = error(await mcp.call_tool("browser_file_upload", {"ref": field, "paths": [long]}))
        assert "is not a readable file" in too_long and "OSError" not in too_long and len(too_long) < 1000
        outside_long = str(tmp_path / ("z" * 5000))
        far = error(await mcp.call_tool("browser_file_upload", {"ref": field, "paths": [outside_long]}))
        assert f"… ({len(outside_long)} characters) is outside the folders" in far and len(far) < 1000, far[
            :400
        ]
        saved = error(await mcp.call_tool("browser_storage_state", {"path": "x" * 100_000}))
        assert "OSError" not in saved and len(saved) < 1000, saved[:300]
        assert await page_value(mcp, tab, "() => document.title") == "a.txt:5,b.txt:2"


async def test_file_upload_puts_a_folder_into_a_folder_input(
    connect: Callable[..., Client], site: LocalSite, tmp_path: Path
) -> None:
    # A folder input (webkitdirectory) takes a folder, and the page gets every file in it. A file
    # was refused ("requires passing a path to a directory") and so was a folder ("it is a folder.
    # Give the path of a file"): no upload could reach it.
    listed = "[...this.files].map(f => f.webkitRelativePath).sort().join(',')"
    site.set_content(
        "/folder-upload",
        f'<title>Folders</title><label>Project <input type="file" webkitdirectory onchange="document.title = {listed}">'
        "</label><button onclick=\"document.getElementById('hidden').click()\">Choose folder</button>"
        f'<input type="file" id="hidden" webkitdirectory style="display:none" onchange="document.title = {listed}">'
        '<label>Plain <input type="file"></label>',
    )
    inside = tmp_path / "allowed"
    (inside / "docs" / "sub").mkdir(parents=True)
    (inside / "docs" / "a.txt").write_text("a")
    (inside / "docs" / "sub" / "b.txt").write_text("b")
    (tmp_path / "secret.txt").write_text("do not send")
    async with connect(allowed_file_roots=(str(inside),)) as mcp:
        tab = await background_tab(mcp, site.url("/folder-upload"))
        snap = await snapshot(mcp, tab)
        folder_input, button, plain = refs_of(
            snap, 'button "Project"', 'button "Choose folder"', 'button "Plain"'
        )
        docs = str(inside / "docs")
        for ref in (folder_input, button):  # the input, and the button that opens its picker
            put = ok(await mcp.call_tool("browser_file_upload", {"ref": ref, "paths": [docs]}))
            assert section(put, "Result").startswith(
                f"Put the folder docs (2 files) into {ref} on tab {tab}."
            ), put
            assert await page_value(mcp, tab, "() => document.title") == "docs/a.txt,docs/sub/b.txt"
            ok(
                await mcp.call_tool(
                    "browser_evaluate", {"function": "() => { document.title = '' }", "tabId": tab}
                )
            )
            files = error(
                await mcp.call_tool(
                    "browser_file_upload", {"ref": ref, "paths": [str(inside / "docs" / "a.txt")]}
                )
            )
            assert (
                f"failed: {ref} takes a folder (a folder input: the page gets every file in it), not files."
                in files
            )
            assert "Pass the path of one folder." in files, files
        # Any other file input takes files, as before.
        folder = error(await mcp.call_tool("browser_file_upload", {"ref": plain, "paths": [docs]}))
        assert f"{docs!r} is not a readable file: it is a folder. Give the path of a file inside" in folder, (
            folder
        )
        # A link in the folder to a file outside the allowed folders is no way around them.
        (inside / "docs" / "sub" / "secret.txt").symlink_to(tmp_path / "secret.txt")
        linked = error(await mcp.call_tool("browser_file_upload", {"ref": folder_input, "paths": [docs]}))
        assert linked.startswith(
            f"{inside / 'docs' / 'sub' / 'secret.txt'} (a link to {tmp_path / 'secret.txt'}) is outside the folders "
            "files may be uploaded from"
        ), linked
        assert await page_value(mcp, tab, "() => document.title") == ""


async def test_file_upload_refuses_a_disabled_file_input(
    connect: Callable[..., Client], site: LocalSite, tmp_path: Path
) -> None:
    # A user cannot choose files for a disabled input, and its form does not send them: the
    # upload said "Put a.txt into ..." and the page had the file on a field that goes nowhere.
    site.set_content(
        "/disabled-upload",
        '<title>Apply</title><label>Resume <input type="file" disabled onchange="document.title = \'changed\'"></label>',
    )
    (tmp_path / "a.txt").write_text("hello")
    async with connect(allowed_file_roots=(str(tmp_path),)) as mcp:
        tab = await background_tab(mcp, site.url("/disabled-upload"))
        snap = await snapshot(mcp, tab)
        field, label = ref_of(snap, 'button "Resume" [disabled]'), ref_of(snap, "generic [ref=")
        for ref in (field, label):  # the input, and its label (which names the same control)
            refused = error(
                await mcp.call_tool("browser_file_upload", {"ref": ref, "paths": [str(tmp_path / "a.txt")]})
            )
            assert f"Uploading 1 file to {ref} on tab {tab} failed: element {ref} is disabled." in refused
            assert "If the page enables it later" in refused, refused
        files = "() => [document.querySelector('input').files.length, document.title]"
        assert await page_value(mcp, tab, files) == [0, "Apply"]


async def test_file_upload_through_a_button_that_opens_the_file_picker(
    connect: Callable[..., Client], site: LocalSite, tmp_path: Path
) -> None:
    # The usual styled upload: a button clicks a hidden file input, which no snapshot shows.
    site.set_content(
        "/picker",
        "<button onclick=\"document.getElementById('hidden').click()\">Choose file</button>"
        '<input type="file" id="hidden" style="display:none" '
        "onchange=\"document.title = [...this.files].map(f => f.name).join(',')\">"
        '<input type="file" aria-label="Single"><p>Drop zone</p>',
    )
    (tmp_path / "a.txt").write_text("hello")
    (tmp_path / "b.txt").write_text("hi")
    two = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    async with connect(allowed_file_roots=(str(tmp_path),)) as mcp:
        tab = await background_tab(mcp, site.url("/picker"))
        snap = await snapshot(mcp, tab)
        button, single, zone = refs_of(snap, 'button "Choose file"', 'button "Single"', "paragraph")

        # A plain click says the picker opened, and how to answer it (nothing is chosen yet).
        clicked = ok(await mcp.call_tool("browser_click", {"ref": button}))
        assert (
            f'It opened a file picker, which tabpilot held back: choose files with browser_file_upload(ref="{button}"'
            in section(clicked, "Result")
        )
        assert result_of(clicked)["filePicker"] is True
        assert await page_value(mcp, tab, "() => document.getElementById('hidden').files.length") == 0

        refused = error(await mcp.call_tool("browser_file_upload", {"ref": button, "paths": two}))
        assert f"the file picker {button} opens takes one file. Pass one path." in refused
        uploaded = ok(await mcp.call_tool("browser_file_upload", {"ref": button, "paths": two[:1]}))
        assert f"Put a.txt into {button} on tab {tab}." in section(uploaded, "Result")
        assert await page_value(mcp, tab, "() => document.title") == "a.txt"

        refused = error(await mcp.call_tool("browser_file_upload", {"ref": single, "paths": two}))
        assert f"element {single} takes one file (it is no multiple-file input). Pass one path." in refused
        refused = error(await mcp.call_tool("browser_file_upload", {"ref": zone, "paths": two[:1]}))
        assert f"{zone} is not a file input, and clicking it opened no file picker." in refused
        assert "or of the button that opens the file picker" in refused
        # An ordinary click opens no picker and says nothing of one.
        clicked = ok(await mcp.call_tool("browser_click", {"ref": zone}))
        assert "file picker" not in text(clicked) and "filePicker" not in result_of(clicked)
    async with connect(caps=("observe",)) as mcp:  # no browser_file_upload: none advised
        tab = await background_tab(mcp, site.url("/picker"))
        button = ref_of(await snapshot(mcp, tab), 'button "Choose file"')
        clicked = ok(await mcp.call_tool("browser_click", {"ref": button}))
        assert "It opened a file picker, which tabpilot held back (no tool here uploads files)." in section(
            clicked, "Result"
        )


async def test_a_file_picker_an_iframe_of_another_site_opens_is_said_and_answered(
    connect: Callable[..., Client], site: LocalSite, tmp_path: Path
) -> None:
    # An upload widget embedded from another site (a cross-site iframe runs in a target of its
    # own): its picker went unsaid, and the agent heard only that the click was done.
    site.set_content(
        "/widget",
        "<button onclick=\"document.getElementById('hidden').click()\">Attach</button>"
        '<input type="file" id="hidden" style="display:none" '
        "onchange=\"parent.postMessage([...this.files].map(f => f.name).join(','), '*')\">",
    )
    widget = site.url("/widget").replace("127.0.0.1", "localhost")
    site.set_content(
        "/embeds",
        f'<iframe src="{widget}"></iframe><script>addEventListener("message", (e) => {{ document.title = e.data }})</script>',
    )
    (tmp_path / "a.txt").write_text("hello")
    async with connect(allowed_file_roots=(str(tmp_path),)) as mcp:
        tab = await background_tab(mcp, site.url("/embeds"))
        button = ref_of(await snapshot(mcp, tab), 'button "Attach"')
        clicked = ok(await mcp.call_tool("browser_click", {"ref": button}))
        assert (
            f'It opened a file picker, which tabpilot held back: choose files with browser_file_upload(ref="{button}"'
            in section(clicked, "Result")
        )
        uploaded = ok(
            await mcp.call_tool("browser_file_upload", {"ref": button, "paths": [str(tmp_path / "a.txt")]})
        )
        assert f"Put a.txt into {button} on tab {tab}." in section(uploaded, "Result")
        assert (
            await poll(lambda: page_value(mcp, tab, "() => document.title"), lambda t: t == "a.txt")
            == "a.txt"
        )


async def test_drag_moves_an_element_onto_another_on_a_background_tab(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/drag",
        '<div id="card" draggable="true" role="button" aria-label="Card" '
        "ondragstart=\"event.dataTransfer.setData('text', 'card')\">Card</div>"
        '<div id="bin" role="region" aria-label="Bin" style="width:200px;height:100px;border:1px solid" '
        'ondragover="event.preventDefault()" '
        "ondrop=\"event.preventDefault(); this.textContent = 'dropped ' + event.dataTransfer.getData('text')\">"
        "Bin</div>",
    )
    async with connect() as mcp:
        tab = await background_tab(mcp, site.url("/drag"))
        snap = await snapshot(mcp, tab)
        card, bin_ = ref_of(snap, 'button "Card"'), ref_of(snap, 'region "Bin"')
        dragged = ok(await mcp.call_tool("browser_drag", {"startRef": card, "endRef": bin_}))
        assert f"Dragged {card} onto {bin_} on tab {tab}" in section(dragged, "Result")
        assert (
            await page_value(mcp, tab, "() => document.getElementById('bin').textContent") == "dropped card"
        )


async def test_a_drag_between_frames_of_one_origin_drops_and_one_across_origins_is_refused(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    frame = (
        '<div draggable="true" role="button" aria-label="Card {n}" '
        "ondragstart=\"event.dataTransfer.setData('text', 'card')\">Card</div>"
        '<div role="region" aria-label="Bin {n}" style="width:200px;height:60px;border:1px solid" '
        'ondragover="event.preventDefault()" '
        "ondrop=\"event.preventDefault(); top.postMessage('dropped in {n}', '*')\">Bin</div>"
    )
    for n in (1, 2, 3):
        site.set_content(f"/bin{n}", frame.format(n=n))
    # Frames 1 and 2 are of the page's origin; frame 3 is of another site (a process of its own).
    site.set_content(
        "/frames",
        f"<title>Frames</title><iframe src='/bin1'></iframe><iframe src='/bin2'></iframe>"
        f"<iframe src='http://localhost:{site.port}/bin3'></iframe>"
        "<script>addEventListener('message', (e) => document.title += ', ' + e.data)</script>",
    )
    async with connect() as mcp:
        tab = await background_tab(mcp, site.url("/frames"))
        snap = await snapshot(mcp, tab)
        card1, bin2, bin3 = ref_of(snap, '"Card 1"'), ref_of(snap, '"Bin 2"'), ref_of(snap, '"Bin 3"')

        ok(await mcp.call_tool("browser_drag", {"startRef": card1, "endRef": bin2}))
        refused = error(await mcp.call_tool("browser_drag", {"startRef": card1, "endRef": bin3}))

        assert (
            f"Dragging {card1} to {bin3} on tab {tab} failed: {card1} and {bin3} are in frames of different "
            f"origins ({site.origin} and http://localhost:{site.port}), and a drag from one such frame into "
            "the other is not supported"
        ) in refused, refused
        done = await poll(lambda: page_value(mcp, tab, "() => document.title"), lambda t: "dropped" in t)
        assert done == "Frames, dropped in 2"


async def test_resize_changes_what_the_page_sees_and_screenshots_take_format_quality_and_width(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await background_tab(mcp, site.url("/page/a"))
        resized = result_of(
            ok(await mcp.call_tool("browser_resize", {"tabId": tab, "width": 900, "height": 600}))
        )
        assert (resized["width"], resized["height"]) == (900, 600)
        assert await page_value(mcp, tab, "() => [innerWidth, innerHeight]") == [900, 600]

        png = ok(await mcp.call_tool("browser_screenshot", {"tabId": tab}))
        (image,) = [c for c in png.content if isinstance(c, ImageContent)]
        assert image.mime_type == "image/png" and result_of(png)["width"] == 900

        small = ok(
            await mcp.call_tool(
                "browser_screenshot", {"tabId": tab, "type": "jpeg", "quality": 40, "maxWidth": 300}
            )
        )
        (jpeg,) = [c for c in small.content if isinstance(c, ImageContent)]
        assert jpeg.mime_type == "image/jpeg"
        assert (result_of(small)["width"], result_of(small)["height"]) == (300, 200)
        raw = base64.b64decode(jpeg.data)
        assert raw[:2] == b"\xff\xd8" and image_size(raw) == (300, 200)

        narrow = ok(await mcp.call_tool("browser_screenshot", {"tabId": tab, "maxWidth": 2000}))
        assert result_of(narrow)["width"] == 900  # never scaled up

        heading = ref_of(await snapshot(mcp, tab), 'heading "Page a"')
        element = result_of(ok(await mcp.call_tool("browser_screenshot", {"ref": heading, "maxWidth": 100})))
        assert element["width"] <= 100 and element["height"] > 0

        assert "quality" in error(await mcp.call_tool("browser_screenshot", {"tabId": tab, "quality": 50}))
        assert "'width'" in error(
            await mcp.call_tool("browser_resize", {"tabId": tab, "width": 5, "height": 600})
        )


async def test_a_resize_that_makes_the_page_open_a_dialog_says_so_at_once(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Before, the call waited out its whole timeout and said the page may be busy.
    # The page's first read of its size opens the dialog: during the resize, every time (a resize
    # listener fires a frame later, after the resize may have answered).
    site.set_content(
        "/alert-on-resize",
        "<title>Resize</title><script>let asked = false; Object.defineProperty(window, 'innerWidth', "
        "{get() { if (!asked) { asked = true; alert('resized'); } return 0; }})</script>",
    )
    async with connect() as mcp:
        tab = await background_tab(mcp, site.url("/alert-on-resize"))
        refused = error(await mcp.call_tool("browser_resize", {"tabId": tab, "width": 700, "height": 500}))
        assert f"Tab {tab} has an open alert dialog ('resized')" in refused
        ok(await mcp.call_tool("browser_handle_dialog", {"tabId": tab, "accept": True}))
        assert await page_value(mcp, tab, "() => matchMedia('(width: 700px)').matches") is True


async def test_storage_state_is_saved_inside_the_roots_and_a_launch_starts_from_it(
    connect: Callable[..., Client], site: LocalSite, tmp_path: Path
) -> None:
    async with connect(allowed_file_roots=(str(tmp_path),)) as mcp:
        tab = await background_tab(mcp, site.url("/api/set-cookie?name=login&value=kept-login"))
        saved = ok(await mcp.call_tool("browser_storage_state", {"path": "state.json"}))
        assert result_of(saved)["cookies"] == 1 and "kept-login" not in text(saved)
        state = json.loads((tmp_path / "state.json").read_text())
        assert [(c["name"], c["value"]) for c in state["cookies"]] == [("login", "kept-login")]
        refused = error(await mcp.call_tool("browser_storage_state", {"path": "/etc/state.json"}))
        assert "outside the folders files may be written to" in refused
        # Playwright reads localStorage in the open pages, and skips one that shows a dialog, not
        # its popup on the same site, which the dialog holds up too: refused at once, not after 30 s.
        ok(await mcp.call_tool("browser_navigate", {"url": "about:blank", "tabId": tab}))
        asking = await background_tab(mcp, site.url("/page/a"))
        opening = "() => { window.open('/page/b'); setTimeout(() => alert('wait'), 100); }"
        popup = data(ok(await mcp.call_tool("browser_evaluate", {"function": opening, "tabId": asking})))[
            "result"
        ]["openedTabIds"][0]
        # The alert comes on the page's timer: wait until the tab shows it (a busy machine is late).
        listed = await poll(
            lambda: mcp.call_tool("browser_tabs", {"action": "list"}),
            lambda r: "alert dialog open" in tab_line(r, asking),
        )
        assert "alert dialog open" in tab_line(listed, asking), text(listed)
        blocked = error(await mcp.call_tool("browser_storage_state", {"path": "blocked.json"}))
        assert f"Tab {popup} waits for the alert dialog open on tab {asking}" in blocked
        assert f"browser_handle_dialog(tabId={asking}" in blocked and not (tmp_path / "blocked.json").exists()
        ok(await mcp.call_tool("browser_handle_dialog", {"tabId": asking, "accept": True}))
        ok(await mcp.call_tool("browser_storage_state", {"path": "blocked.json"}))

        launched = result_of(
            ok(
                await mcp.call_tool(
                    "browser_instance",
                    {
                        "action": "launch",
                        "options": {"storageState": str(tmp_path / "state.json"), "viewport": "800x500"},
                    },
                )
            )
        )
        fresh = launched["activeTabId"]
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/api/echo"), "tabId": fresh}))
        echoed = json.loads(await page_value(mcp, fresh, "() => document.body.innerText"))
        assert "login=kept-login" in echoed["headers"]["cookie"]
        assert await page_value(mcp, fresh, "() => innerWidth") == 800
        assert tab != fresh

        (tmp_path / "listing.json").write_text("[]")
        for options, message in (
            ({"browserArgs": ["--no-sandbox"]}, "only be set when the server starts"),
            # A tool call must not choose where files are written.
            (
                {"downloadsDir": str(tmp_path)},
                "options downloadsDir can only be set when the server starts (its command line: --downloads-dir)",
            ),
            ({"initScripts": ["/etc/hostname"]}, "outside the folders files may be read from"),
            # Checked before it is read: a file outside the folders is not opened, even to say what is wrong.
            ({"storageState": "/etc/hostname"}, "outside the folders files may be read from"),
            (
                {"storageState": str(tmp_path / "listing.json")},
                "it does not hold a JSON object; a storage state is",
            ),
            ({"proxyServer": "ftp://proxy:21"}, "the scheme must be one of http, https, socks4, socks5"),
            ({"viewport": "huge"}, "not a viewport size"),
            # It listed the library's names (user_agent), the command line's own (browser_path) among them.
            (
                {"colour": "red"},
                "browser_instance launch has no option 'colour'. Its options: headless, ignoreHttpsErrors, "
                "initScripts, proxyBypass, proxyServer, storageState, timeoutAction, timeoutNavigation, "
                "userAgent, userDataDir, viewport (the browser's path, arguments, CDP headers and downloads "
                "folder are the server's command line's).",
            ),
            # As the flag and a config file write it.
            (
                {"user-agent": "x", "viewport-size": "800x600"},
                "no option 'user-agent' (did you mean userAgent?)",
            ),
            ({"viewportSize": "800x600"}, "no option 'viewportSize' (did you mean viewport?)"),
            # Wrong JSON types answered Python's TypeError ("cannot unpack non-iterable int object").
            ({"viewport": 5}, "viewport must be 'WIDTHxHEIGHT', [width, height] or {"),
            ({"viewport": {"width": 800}}, 'not {"width": 800}'),
            ({"initScripts": 5}, "init_scripts must be a list of strings, not 5"),
            ({"cdpHeaders": 5}, "cdp_headers must be an object of name: value"),
        ):
            said = error(await mcp.call_tool("browser_instance", {"action": "launch", "options": options}))
            assert message in said and "Error:" not in said and "unexpectedly" not in said, said


async def test_secrets_are_typed_from_placeholders_and_never_shown(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    secrets = Secrets({"PASSWORD": "hunter2-very-secret", "USER": "ada@example.test"})
    async with connect(secrets=secrets) as mcp:
        tab = await background_tab(mcp, site.url("/form"))
        snap = await snapshot(mcp, tab)
        name, message = ref_of(snap, 'textbox "Name"'), ref_of(snap, 'textbox "Message"')
        typed = ok(await mcp.call_tool("browser_type", {"ref": name, "text": "{{USER}}"}))
        filled = ok(
            await mcp.call_tool(
                "browser_fill_form", {"fields": [{"ref": message, "value": "pw {{ PASSWORD }}"}]}
            )
        )
        value = await page_value(mcp, tab, "() => document.getElementById('message').value")
        assert value == "pw {{PASSWORD}}"  # the page has the value; the response shows the placeholder
        said = [
            typed,
            filled,
            ok(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab})),
            ok(
                await mcp.call_tool(
                    "browser_evaluate",
                    {"function": "() => document.getElementById('name').value", "tabId": tab},
                )
            ),
            ok(await mcp.call_tool("browser_observe", {"what": "actions"})),
        ]
        everything = "\n".join(text(r) + json.dumps(r.structured_content) for r in said)
        assert "hunter2-very-secret" not in everything and "ada@example.test" not in everything
        assert "{{USER}}" in everything and "{{PASSWORD}}" in everything

        unknown = error(await mcp.call_tool("browser_type", {"ref": name, "text": "{{TOKEN}}"}))
        assert "{{TOKEN}} names no secret" in unknown and "PASSWORD, USER" in unknown
        assert await page_value(mcp, tab, "() => document.getElementById('name').value") == "{{USER}}"


def test_secrets_come_from_a_dotenv_file(tmp_path: Path) -> None:
    env = tmp_path / "secrets.env"
    env.write_text(
        "# logins\nexport USER=ada.l\nPASSWORD=\"p#ss word\"\nPIN=1234 # comment\nQUOTED='x y z'\n"
    )
    secrets = Secrets.from_dotenv(env)
    assert secrets.names == ["PASSWORD", "PIN", "QUOTED", "USER"]
    assert secrets.expand("{{USER}}:{{PASSWORD}}:{{PIN}}:{{QUOTED}}") == "ada.l:p#ss word:1234:x y z"
    assert secrets.mask("ada.l typed p#ss word") == "{{USER}} typed {{PASSWORD}}"
    env.write_text("NOT A LINE\n")
    with pytest.raises(ValueError, match="line 1"):
        Secrets.from_dotenv(env)


async def test_caps_offer_core_and_the_groups_asked_for(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        every = {t.name for t in (await mcp.list_tools()).tools}
    assert {
        "browser_fill_form",
        "browser_file_upload",
        "browser_drag",
        "browser_resize",
        "browser_storage_state",
    } <= every
    async with connect(caps=("forms",)) as mcp:
        some = {t.name for t in (await mcp.list_tools()).tools}
        assert "browser_fill_form" in some and "browser_tabs" in some and "browser_click" in some
        assert not some & {"browser_screenshot", "browser_evaluate", "browser_observe", "browser_instance"}
        unknown = await mcp.call_tool("browser_evaluate", {"function": "() => 1"})
        assert unknown.is_error
        # Advice names no tool of a group left out: no browser_instance here.
        missing = error(await mcp.call_tool("browser_tabs", {"action": "list", "instanceId": "inst_9"}))
        assert missing.endswith("Use one of these."), missing
    async with connect(caps=("observe",)) as mcp:  # no form fill either
        form = await background_tab(mcp, site.url("/form"))
        subscribe = ref_of(await snapshot(mcp, form), 'checkbox "Subscribe"')
        typed = error(await mcp.call_tool("browser_type", {"ref": subscribe, "text": "yes", "tabId": form}))
        assert typed.endswith("is a checkbox, not a text field. Click it to change it."), typed


async def test_the_default_tool_list_stays_small_and_says_what_each_argument_is(
    connect: Callable[..., Client],
) -> None:
    async with connect() as mcp:
        tools = (await mcp.list_tools()).tools
    listed = json.dumps(
        [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools], separators=(",", ":")
    )
    assert len(listed) <= 12_000, len(listed)
    for tool in tools:
        assert tool.description and tool.title, tool.name
        schema = json.dumps(tool.input_schema)
        assert '"title"' not in schema and '{"type": "null"}' not in schema, tool.name
    tab_ids = [
        t.input_schema["properties"]["tabId"] for t in tools if "tabId" in t.input_schema["properties"]
    ]
    assert tab_ids and all(p["type"] == ["integer", "string"] for p in tab_ids)


ARMED = """<input id=i aria-label=inp><select id=s aria-label=sel><option>a</option><option>b</option></select>
<input type=file id=f aria-label=file><script>
// Reading the field for the action's check opens an alert once armed: a dialog that opens while
// the field is checked (as a page's timer may).
const arm = (el, p, v) => Object.defineProperty(el, p, {configurable: true, get() { if (window.armed) {
  window.armed = false; alert('x'); } return v; }});
arm(i, 'readOnly', false); arm(s, 'multiple', false); arm(f, 'type', 'file');
</script>"""


async def test_a_dialog_that_opens_while_a_field_is_checked_ends_the_action_at_once(
    connect: Callable[..., Client], site: LocalSite, tmp_path: Path
) -> None:
    # The check before typing, filling, selecting or uploading waited for ever (its own timeout
    # did not cover it), and every action queued behind it on the tab too.
    site.set_content("/armed", ARMED)
    upload = tmp_path / "a.txt"
    upload.write_text("a")
    async with connect(allowed_file_roots=(str(tmp_path),)) as mcp:
        shown = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/armed")}))
        snap = section(shown, "Snapshot")
        box, sel, file = (
            ref_of(snap, 'textbox "inp"'),
            ref_of(snap, 'combobox "sel"'),
            ref_of(snap, 'button "file"'),
        )
        for tool, arguments in (
            ("browser_type", {"ref": box, "text": "x"}),
            ("browser_fill_form", {"fields": [{"ref": box, "value": "x"}]}),
            ("browser_select_option", {"ref": sel, "values": ["b"]}),
            ("browser_file_upload", {"ref": file, "paths": [str(upload)]}),
        ):
            ok(await mcp.call_tool("browser_evaluate", {"function": "() => { window.armed = true; }"}))
            with anyio.fail_after(15):
                answer = await mcp.call_tool(tool, arguments)
            said = text(answer)
            assert "alert" in said and "browser_handle_dialog" in said, (tool, said)
            ok(await mcp.call_tool("browser_handle_dialog", {"accept": True}))


STOPPING = """<title>Stopping</title>
<select aria-label="Country" onchange="confirm('Change country? The address is cleared.')">
<option>FR</option><option>DE</option></select>
<input aria-label="City"><input aria-label="Zip" onkeydown="if (event.key === '3') alert('three')">
<form onsubmit="event.preventDefault(); document.title = 'sent'">
<input aria-label="Search" oninput="if (this.value === 'go') alert('suggestions')"></form>
<input aria-label="Chat" onkeydown="if (event.key === 'Enter') { this.title += event.repeat; alert('sent') }">"""


async def test_a_dialog_an_input_of_several_steps_opens_stops_the_steps_after_it(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The steps after the one that opened the dialog went on once the dialog was handled, after
    # the answer and out of the tab's turn (beside the agent's next calls, opening the dialogs of
    # their keys then), while the answer said them done: "Filled 2 fields ... 'Berlin'" of a City
    # filled only later, "Typed '12345'" of a field then holding '12'.
    site.set_content("/stopping", STOPPING)
    async with connect() as mcp:
        shown = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/stopping")}))
        country, city, zip_code, search = refs_of(
            section(shown, "Snapshot"), '"Country"', '"City"', '"Zip"', '"Search"'
        )
        tab = await active_tab(mcp)
        values = (
            "() => [...document.querySelectorAll('select, input')].map(e => e.value).concat(document.title)"
        )

        fields = [{"ref": country, "value": "DE"}, {"ref": city, "value": "Berlin"}]
        filled = section(ok(await mcp.call_tool("browser_fill_form", {"fields": fields})), "Result")
        assert filled.startswith(
            f"Filled 1 of 2 fields on tab {tab}: {country} = 'DE'. A dialog it opened stopped the rest: "
            f"{city} was not filled."
        ), filled
        ok(await mcp.call_tool("browser_handle_dialog", {"accept": True}))

        typed = section(
            ok(await mcp.call_tool("browser_type", {"ref": zip_code, "text": "12345", "slowly": True})),
            "Result",
        )
        assert typed.startswith(
            f"Typing '12345' into {zip_code} on tab {tab} stopped at a dialog it opened: the keys after the one "
            "that opened it were not typed."
        ), typed
        ok(await mcp.call_tool("browser_handle_dialog", {"accept": True}))

        searched = section(
            ok(await mcp.call_tool("browser_type", {"ref": search, "text": "go", "submit": True})), "Result"
        )
        assert searched.startswith(
            f"Typed 'go' into {search} on tab {tab}; a dialog it opened stopped it before Enter was pressed."
        ), searched
        ok(await mcp.call_tool("browser_handle_dialog", {"accept": True}))
        # Nothing of what was stopped is done once the dialogs are handled.
        await anyio.sleep(0.5)
        assert await page_value(mcp, tab, values) == ["DE", "", "123", "go", "", "Stopping"]

        # The step that opened the dialog ends once it is handled: a key it pressed is not left
        # held down (the next press of it would be a repeat).
        chat = ref_of(
            section(ok(await mcp.call_tool("browser_snapshot", {"full": True})), "Snapshot"), '"Chat"'
        )
        sent = ok(await mcp.call_tool("browser_type", {"ref": chat, "text": "hi", "submit": True}))
        assert section(sent, "Result").startswith(
            f"Typed 'hi' into {chat} on tab {tab} and pressed Enter."
        ), text(sent)
        ok(await mcp.call_tool("browser_handle_dialog", {"accept": True}))
        ok(await mcp.call_tool("browser_press_key", {"ref": chat, "key": "Enter"}))
        ok(await mcp.call_tool("browser_handle_dialog", {"accept": True}))
        assert await page_value(mcp, tab, "() => document.querySelectorAll('input')[3].title") == "falsefalse"
