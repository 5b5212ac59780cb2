"""Thin handles over Playwright's public API: a browser, its contexts, pages, elements, dialogs
and CDP sessions. Each method is one Playwright call; errors are translated by the caller
(`map_playwright_errors`), which knows what was under way."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import json
import re
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    Dialog,
    Download,
    FileChooser,
    Frame,
    Locator,
    Playwright,
    Response,
)
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page as Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from .._options import BrowserOptions

Disposer = Callable[[], None]
MouseButton = Literal["left", "middle", "right"]
ERROR_PAGE = "chrome-error://"
"""What the URL of Chromium's own error page (a page that failed to load) starts with."""
_LOADED = """(whole) => (whole ? document.readyState === 'complete' : document.readyState !== 'loading')
  || new Promise((resolve) => addEventListener(whole ? 'load' : 'DOMContentLoaded', () => resolve(true), { once: true }))"""
"""Resolves once the document is parsed (`whole`: loaded): at once for a page that is (a page
restored from the back/forward cache fires no load event), else at its DOMContentLoaded (load)."""
PLAIN_MAX_DEPTH = 200
"""How deep a script's result may nest (`_AS_JSON`): deeper is an error, not a silent null. What
reads it after (Python's JSON parser, the server's walks of an answer) recurses once or twice a
level, within Python's 1000 frames; CDP refused results from about 200 levels too."""
SCRIPT_RESULT_MAX_CHARS = 10_000_000
"""How long a script's result may be as JSON text (`_AS_JSON`): longer is an error that says so."""
_AS_JSON = (
    r"""(value) => {
  const out = [];
  let size = 0;
  const inside = new Set();
  const tooBig = new Error('Cannot serialize result: over MAX_TEXT characters as JSON');
  const tooDeep = new Error('Cannot serialize result: nested over MAX_DEPTH levels');
  const put = (text) => {
    size += text.length;
    if (size > MAX_CHARS) throw tooBig;
    out.push(text);
  };
  const said = (error) => {
    try { return String(error); } catch { return 'an error'; }
  };
  const isWindow = (v) => {
    try { return v.window === v; } catch { return false; }  // a getter named window that throws
  };
  // Written here, not by JSON.stringify, which a page may have replaced; a lone surrogate is
  // escaped, as JSON.stringify does.
  const escapes = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };
  const special = /["\\\u0000-\u001f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
  const escaped = (c) => escapes[c] || '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');
  const quote = (text) => put('"' + String(text).replace(special, escaped) + '"');
  // Kinds are told by their tag, not instanceof: a value from an iframe's window has that
  // window's Date, Map and Node.
  const tag = (v) => Object.prototype.toString.call(v).slice(8, -1);
  const write = (v, depth) => {
    switch (typeof v) {
      case 'string': return quote(v);
      case 'number': return Number.isFinite(v) ? put(String(v)) : quote(v);
      case 'bigint': {  // as its digits; as text past what Python reads as a number (4300 digits)
        const digits = String(v);
        return digits.length > 4000 ? quote(digits) : put(digits);
      }
      case 'boolean': return put(v ? 'true' : 'false');
      case 'symbol': return quote(String(v));
      case 'undefined': case 'function': return put('null');
    }
    if (v === null) return put('null');
    // An object that throws as it is read (a Proxy's trap, a getter, a revoked Proxy) is written
    // as what it threw, in its place: the rest of the result is not lost to it.
    const [parts, length] = [out.length, size];
    try {
      return writeObject(v, depth);
    } catch (error) {
      if (error === tooBig || error === tooDeep) throw error;
      out.length = parts;
      size = length;
      return quote(`[unreadable: ${said(error)}]`);
    }
  };
  const writeObject = (v, depth) => {
    const kind = tag(v);
    if (kind === 'Date') {
      const time = Date.prototype.getTime.call(v);
      return quote(Number.isNaN(time) ? 'Invalid Date' : Date.prototype.toISOString.call(v));
    }
    if (kind === 'RegExp') return quote(String(v));
    if (kind === 'Error' || v instanceof Error) return quote(Error.prototype.toString.call(v));
    if (kind === 'URL') return quote(v.href);
    if (['Boolean', 'Number', 'String', 'BigInt', 'Symbol'].includes(kind)) return write(v.valueOf(), depth);
    if (isWindow(v)) return quote('[object Window]');  // another origin's too
    if (typeof v.nodeType === 'number' && typeof v.nodeName === 'string') return quote(`[object ${kind}]`);
    if (inside.has(v)) return quote('[Circular]');
    if (depth >= MAX_DEPTH) throw tooDeep;
    inside.add(v);
    try {
      const listed = kind === 'Map' || kind === 'Set' || kind === 'NodeList' || kind === 'HTMLCollection'
        || (ArrayBuffer.isView(v) && kind !== 'DataView');
      if (Array.isArray(v) || listed) {
        const items = listed ? Array.from(v) : v;
        put('[');
        for (let i = 0; i < items.length; i++) {
          if (i) put(',');
          write(items[i], depth + 1);
        }
        return put(']');
      }
      // An object that says how it is written as JSON (a DOMRect, a class with toJSON), as
      // JSON.stringify writes it.
      if (typeof v.toJSON === 'function') return write(v.toJSON(), depth + 1);
      put('{');
      let first = true;
      for (const key of Object.keys(v)) {
        let item;
        try { item = v[key]; } catch { continue; }  // a getter that throws: left out
        if (!first) put(',');
        first = false;
        quote(key);
        put(':');
        write(item, depth + 1);
      }
      return put('}');
    } finally {
      inside.delete(v);
    }
  };
  write(value, 0);
  return out.join('');
}""".replace("MAX_DEPTH", str(PLAIN_MAX_DEPTH))
    .replace("MAX_CHARS", str(SCRIPT_RESULT_MAX_CHARS))
    .replace("MAX_TEXT", f"{SCRIPT_RESULT_MAX_CHARS:,}")
)
"""A script's result as JSON text, made in the page: Playwright's own serializer sends a value as a
tree its Python client checks item by item, which took 1.3 s of the server's event loop for 20,000
small objects (every tab's calls waited), and it loses what JSON has no words for. Here each value
is written as JavaScript would print it: NaN, Infinity, a Symbol, a RegExp, an Error
(`TypeError: bad`) and an invalid Date as strings; a Date as its ISO time, a URL as its address;
undefined and functions as null; a BigInt as its digits (as text past 4000 of them); a Map as its
[key, value] entries, a Set, a typed array, a NodeList as their items; Boolean, Number and String
objects as their values; a node or a window as its kind (`[object HTMLDivElement]`); an object with
a toJSON method (a DOMRect) as that gives it, as JSON.stringify does; any other object (a class
instance) as its own fields, leaving out a getter that throws; an object that throws as it is read
(a Proxy's trap) as "[unreadable: Error: ...]"; an ancestor met again as "[Circular]" (an object
met twice side by side is written twice). Kinds are told apart as an iframe's values need (their
Date is another window's), and the text is escaped here, not by the page's JSON.stringify, which a
page may replace. Over PLAIN_MAX_DEPTH levels, or longer than SCRIPT_RESULT_MAX_CHARS characters,
is an error that says so (the page stops writing there)."""
TEXT_POLL = 0.05
"""Seconds between two looks for a text a wait is for."""
ERROR_PAGE_TIMEOUT = 2.0
"""Seconds a navigation that failed on the network waits for the browser's error page."""
LOAD_GRACE = 5.0
"""Seconds a navigation waits for its page's load event once the document is parsed: a page whose
image, script or frame never comes (a tracker that hangs) is usable all the same, and is answered
with as it is then (`Navigated.loading`), not after the whole navigation timeout as a failure."""
FILE_PICKER_WAIT = 2.0
"""Seconds a click that should open a file picker waits for it once the click is done."""


# Playwright reads a listener's signature on every event it delivers, to pass it as many
# arguments as it takes; for a bound method that costs about 0.1 ms an event, which a browser
# session relaying 20 busy tabs' network events pays thousands of times a second. A listener
# that states its signature (`__signature__`, PEP 362) is read at once.
_ONE_ARGUMENT = inspect.Signature([inspect.Parameter("argument", inspect.Parameter.POSITIONAL_ONLY)])


_FUNCTION_DECLARATION = re.compile(r"^(async)?\s*function(\s|\()")


def _user_script(function: str, *, on_element: bool) -> str:
    """A user's script (`function`: a function, or an expression) as a function whose result is
    written as JSON text (`_AS_JSON`). The script is read as Playwright reads it (an expression that
    gives a function is called, with the element if there is one, and a promise is awaited), by
    the same `eval` Playwright's own page script uses: statements, errors and page policies
    (CSP) work as they did."""
    code = function.strip()
    if _FUNCTION_DECLARATION.match(code):  # as Playwright does: a declaration gives no value
        code = f"({code})"
    element = "element" if on_element else ""
    # A value thrown that is no Error (a rejected API call's object) reached Playwright as "Object":
    # it is said as its JSON instead, under a name that says what it is.
    return (
        f"async ({element}) => {{ const asJson = {_AS_JSON}; let value; "
        f"try {{ const made = globalThis.eval({json.dumps(code)}); "
        f"value = await (typeof made === 'function' ? made({element}) : made); }} "
        "catch (thrown) { if (thrown instanceof Error) throw thrown; "
        "let text; try { text = asJson(thrown); } catch { text = String(thrown); } "
        "const said = new Error(text.slice(0, 2000)); said.name = 'the script threw'; throw said; } "
        "return value === undefined ? undefined : asJson(value); }"
    )


class _Undefined:
    """What a script returned that has no JSON: `undefined` (no return, `void 0`, a missing property)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = _Undefined()
"""A script's result when it was `undefined`: told apart from `null`, which JSON has."""


def _script_value(text: str | None) -> Any:
    """A user script's JSON text as its value (`_user_script`); None from the page is `undefined`."""
    return UNDEFINED if text is None else json.loads(text)


def _listen(emitter: Any, event: str, handler: Callable[[Any], Any]) -> Disposer:
    """Register `handler(event_argument)` on a Playwright event emitter; returns the disposer."""

    def listener(argument: Any) -> Any:
        return handler(argument)

    listener.__signature__ = _ONE_ARGUMENT  # type: ignore[attr-defined]
    emitter.on(event, listener)

    def dispose() -> None:
        with contextlib.suppress(Exception):
            emitter.remove_listener(event, listener)

    return dispose


def _unfragmented(url: str) -> str:
    return url.partition("#")[0]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


# -- CDP -----------------------------------------------------------------------------------------


class CdpSession:
    """A Chrome DevTools Protocol session (browser-level or one page's)."""

    __slots__ = ("_session",)

    def __init__(self, session: CDPSession) -> None:
        self._session = session

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await self._session.send(method, params)
        return result

    def on(self, event: str, handler: Callable[[dict[str, Any]], None]) -> Disposer:
        return _listen(self._session, event, handler)

    async def detach(self) -> None:
        with contextlib.suppress(PlaywrightError):
            await self._session.detach()


# -- dialogs, elements, pages ----------------------------------------------------------------------


class DialogHandle:
    __slots__ = ("_dialog",)

    def __init__(self, dialog: Dialog) -> None:
        self._dialog = dialog

    @property
    def type(self) -> str:
        return self._dialog.type

    @property
    def message(self) -> str:
        return self._dialog.message

    @property
    def default_value(self) -> str:
        return self._dialog.default_value

    async def accept(self, prompt_text: str | None = None) -> None:
        await (self._dialog.accept(prompt_text) if prompt_text is not None else self._dialog.accept())

    async def dismiss(self) -> None:
        await self._dialog.dismiss()

    async def answer_unseen(self) -> None:
        """What Playwright does with a dialog nobody listens for: a beforeunload one is accepted
        (the page may be left), any other dismissed."""
        await (self._dialog.accept() if self._dialog.type == "beforeunload" else self._dialog.dismiss())


class DownloadHandle:
    """A download a page began: its URL and the file name the server suggested; its file once
    the browser has all of it."""

    __slots__ = ("_download",)

    def __init__(self, download: Download) -> None:
        self._download = download

    @property
    def url(self) -> str:
        return self._download.url

    @property
    def filename(self) -> str:
        return self._download.suggested_filename

    async def save_as(self, path: str) -> str | None:
        """Copy the file to `path` once the browser has all of it (from a remote browser too);
        None when done, else why not (the download failed or was canceled, or the browser went)."""
        try:
            await self._download.save_as(path)
        except PlaywrightError as exc:
            return _download_failure(exc.message)
        return None

    async def finished(self) -> str | None:
        """Wait until the browser has the whole file where it saves downloads; None when it has,
        else why not."""
        try:
            failure = await self._download.failure()
        except PlaywrightError as exc:
            return _download_failure(exc.message)
        return None if failure is None else _download_failure(failure)


def _download_failure(said: str) -> str:
    """Why a download has no file, in words: Playwright says `Download.save_as: canceled` for one
    the server cut off, answered with an HTTP error (a 404 to an `<a download>` link) or the user
    called off. Chromium tells them apart to nobody: its download events (CDP `downloadProgress`)
    say `canceled` and how many bytes came, and the download's request and response reach no
    page's network events (Playwright's, CDP `Network`) nor its routes, so the status is not known."""
    message = said.strip().splitlines()[0] if said.strip() else ""
    if message.startswith("Download."):
        message = message.partition(": ")[2]
    if "has been closed" in message:  # the browser went before the file was whole
        return "the browser closed before it had the whole file"
    if message == "canceled":
        return "it was canceled, or its server answered an error (such as 404) or stopped sending it before the end"
    return message or "it failed"


class FilePicker:
    """A file picker a page opened, held back from the screen until it is given files."""

    __slots__ = ("_chooser",)

    def __init__(self, chooser: FileChooser) -> None:
        self._chooser = chooser

    @property
    def multiple(self) -> bool:
        return self._chooser.is_multiple()

    async def folder(self) -> bool:
        """Whether it picks a folder (its input has `webkitdirectory`): the page gets every file in it."""
        return bool(await self._chooser.element.evaluate("e => e.webkitdirectory"))

    async def set_files(self, paths: Sequence[str], *, timeout: float) -> None:
        await self._chooser.set_files(list(paths), timeout=_ms(timeout))


_INPUT_STATE = """(el, value) => {
  // The element Playwright's fill, select and check act on: a label's control for a label (or
  // an element inside one), a control's enclosing button or checkbox for a part of it.
  if (!el.matches('input, textarea, select') && !el.isContentEditable)
    el = el.closest('button, [role=button], [role=checkbox], [role=radio]') || el;
  if (!el.matches('a, input, textarea, button, select, [role=link], [role=button], [role=checkbox], '
      + '[role=switch], [role=radio]') && !el.isContentEditable) {
    const label = el.closest('label');
    if (label && label.control) el = label.control;
  }
  const tag = el.tagName, type = tag === 'INPUT' ? (el.type || 'text').toLowerCase() : '';
  const role = (el.getAttribute('role') || '').toLowerCase();
  let kind = 'other';
  if (tag === 'SELECT') kind = el.multiple ? 'listbox' : 'select';
  else if (type === 'checkbox' || type === 'radio') kind = type;
  else if (['checkbox', 'radio', 'switch'].includes(role)) kind = role;
  else if (type === 'file') kind = 'file';
  else if (['submit', 'button', 'reset', 'image'].includes(type) || tag === 'BUTTON') kind = 'button';
  else if (tag === 'TEXTAREA' || el.isContentEditable || (tag === 'INPUT' && type !== 'hidden')) kind = 'text';
  // Whether the field keeps `value`: a date, time or number field empties itself for a value
  // not in its format ('tomorrow'), where filling it would silently clear it. Asked of a copy.
  let accepts = null;
  if (value !== null && ['date', 'time', 'datetime-local', 'month', 'week', 'number'].includes(type)) {
    const copy = document.createElement('input');
    copy.type = type;
    copy.value = value.trim();
    accepts = copy.value !== '' || value.trim() === '';
  }
  return {
    disabled: el.matches(':disabled'),
    readOnly: ['INPUT', 'TEXTAREA'].includes(tag) && el.readOnly,
    options: tag === 'SELECT' ? Array.from(el.options, o => [o.value, o.label, o.matches(':disabled')]) : null,
    kind,
    inputType: type,
    folder: type === 'file' && el.webkitdirectory,
    accepts,
    // The most characters (UTF-16 units) the browser keeps of typed text: -1 for no limit.
    maxLength: tag === 'TEXTAREA' || ['text', 'search', 'url', 'tel', 'email', 'password'].includes(type)
      ? el.maxLength : -1,
  };
}"""


_PASSWORDS = """() => {
  const values = [];
  const visit = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) visit(el.shadowRoot);
      if (el instanceof HTMLInputElement && el.type === 'password' && el.value) values.push(el.value);
    }
  };
  visit(document);
  return values;
}"""


_TAKE_FOCUS = """el => {
  if (el.matches(':disabled')) return 'disabled';
  if (el.isContentEditable && el.contentEditable === 'inherit') return 'focused';  // see press
  el.focus();
  const active = el.getRootNode().activeElement;  // the document's, or a shadow root's
  // A label passes the focus to its field (Chromium's label.focus()), where the key goes too.
  if (active && (active === el || el.contains(active) || active === el.control)) return 'focused';
  return el.getClientRects().length && el.checkVisibility({ visibilityProperty: true }) ? 'unfocusable' : 'hidden';
}"""
"""Focus an element; whether it (or an element inside it) has the focus now, else why not."""


_INSIDE_EDITOR = "e => e.isContentEditable && e.contentEditable === 'inherit'"
"""Whether an element is part of a contenteditable editor without being the editor itself."""


class ElementHandle:
    """An element of a page (a Playwright locator); every call takes its own timeout in seconds."""

    __slots__ = ("_locator",)

    def __init__(self, locator: Locator) -> None:
        self._locator = locator

    async def count(self) -> int:
        return await self._locator.count()

    async def input_state(self, value: str | None = None) -> dict[str, Any] | None:
        """At once, without waiting, of the element a fill, select or check acts on (for a label,
        its control): whether it is disabled or read-only, a select's options as [value, label,
        disabled] (an option of a disabled group is disabled too), its `kind` (text, checkbox,
        radio, switch, select, listbox, file, button or other) and `inputType` (an input's type,
        else ''), `folder` (a file input that picks a folder: `webkitdirectory`), `maxLength` (the most characters a text field keeps of typed text, -1 for no
        limit); with `value`, `accepts`: whether a date, time or number input would keep that
        text (None for other elements). None if the element is not on the page now."""
        # evaluate_all does not see aria-ref selectors; evaluate on a locator that is there now
        # returns at once, and gives up quickly on one that is not.
        try:
            state: dict[str, Any] = await self._locator.evaluate(_INPUT_STATE, value, timeout=500)
        except PlaywrightError:
            return None
        return state

    async def click(
        self, *, button: MouseButton, modifiers: Sequence[str], double: bool, timeout: float
    ) -> None:
        mods: Any = list(modifiers)
        if double:
            await self._locator.dblclick(button=button, modifiers=mods, timeout=_ms(timeout))
        else:
            await self._locator.click(button=button, modifiers=mods, timeout=_ms(timeout))

    async def check_clickable(self, *, timeout: float) -> None:
        """Playwright's checks before a click (attached, visible, stable, enabled, not covered by
        another element), without clicking: its TimeoutError's log says which one failed."""
        await self._locator.click(trial=True, timeout=_ms(timeout))

    async def fill(self, text: str, *, timeout: float) -> None:
        await self._locator.fill(text, timeout=_ms(timeout))

    async def type_keys(self, text: str, *, timeout: float, stop: Callable[[], bool] | None = None) -> None:
        """Type `text` key by key into the element (focused first); no key after the one under way
        once `stop()` is true (a dialog that key opened: the key itself ends once it is handled).
        A cancelled call stops typing: Playwright ends the driver's side of it too."""
        keyboard = self._locator.page.keyboard

        async def typing() -> None:
            if await self._locator.evaluate(_INSIDE_EDITOR, timeout=_ms(timeout)):
                # A paragraph of a rich-text editor takes no focus: focus() leaves the editor (the
                # keys went to the page). A click puts the caret in it.
                await self._locator.click(timeout=_ms(timeout))
            else:
                await self._locator.focus(timeout=_ms(timeout))  # as press_sequentially does
            # One key per call (press_sequentially types them all in one): the typing can stop
            # between two keys.
            for char in text:
                if stop is not None and stop():
                    return
                await keyboard.type(char)

        await asyncio.wait_for(typing(), timeout)

    async def take_focus(self, *, timeout: float) -> Literal["focused", "disabled", "hidden", "unfocusable"]:
        """Give the element the keyboard focus, as Playwright's press does first, and say whether it
        has it now (itself, or an element inside it): a disabled, hidden or unfocusable element
        leaves the focus where it was, and a key Playwright presses "on" it goes there instead. A
        part of a rich-text editor counts as focused: `press` gives it the caret with a click."""
        said: Literal["focused", "disabled", "hidden", "unfocusable"] = await self._locator.evaluate(
            _TAKE_FOCUS, timeout=_ms(timeout)
        )
        return said

    async def press(self, key: str, *, timeout: float) -> None:
        if await self._locator.evaluate(_INSIDE_EDITOR, timeout=_ms(timeout)):
            # A paragraph of a rich-text editor takes no focus (Playwright's press left the editor,
            # and the key reached nothing): a click puts the caret in it, as for typing.
            await self._locator.click(timeout=_ms(timeout))
            await self._locator.page.keyboard.press(key)
        else:
            await self._locator.press(key, timeout=_ms(timeout))

    async def select(self, values: Sequence[str], *, timeout: float) -> list[str]:
        return await self._locator.select_option(list(values), timeout=_ms(timeout))

    async def hover(self, *, timeout: float) -> None:
        await self._locator.hover(timeout=_ms(timeout))

    async def check(self, checked: bool, *, timeout: float) -> None:
        await self._locator.set_checked(checked, timeout=_ms(timeout))

    async def set_files(self, paths: Sequence[str], *, timeout: float) -> None:
        await self._locator.set_input_files(list(paths), timeout=_ms(timeout))

    async def click_for_file_picker(self, *, timeout: float) -> FilePicker | None:
        """Click the element and catch the file picker the click opens (Playwright holds a picker
        back from the screen while the page has a listener for it); None if none opened within
        FILE_PICKER_WAIT seconds of the click."""
        opened: asyncio.Future[FileChooser] = asyncio.get_running_loop().create_future()

        def on_picker(chooser: FileChooser) -> None:
            if not opened.done():
                opened.set_result(chooser)

        dispose = _listen(self._locator.page, "filechooser", on_picker)
        try:
            await self._locator.click(timeout=_ms(timeout))
            return FilePicker(await asyncio.wait_for(opened, FILE_PICKER_WAIT))
        except TimeoutError:
            return None
        finally:
            dispose()

    async def frame_origin(self, *, timeout: float) -> str:
        """The origin of the frame the element is in, as its URL says (an about:blank or srcdoc
        iframe's is its parent's); 'null' for one without (a data: URL's)."""
        handle = await self._locator.element_handle(timeout=_ms(timeout))
        try:
            frame = await handle.owner_frame()
        finally:
            with contextlib.suppress(PlaywrightError):
                await handle.dispose()
        while (
            frame is not None
            and frame.parent_frame is not None
            and frame.url in ("about:blank", "about:srcdoc")
        ):
            frame = frame.parent_frame
        parts = urlsplit(frame.url if frame is not None else "")
        return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "null"

    async def drag_to(self, target: ElementHandle, *, timeout: float) -> None:
        await self._locator.drag_to(target._locator, timeout=_ms(timeout))

    async def screenshot(
        self, *, image_type: Literal["png", "jpeg"], quality: int | None, timeout: float
    ) -> bytes:
        return await self._locator.screenshot(type=image_type, quality=quality, timeout=_ms(timeout))

    async def evaluate(self, function: str, *, timeout: float) -> Any:
        return await self._locator.evaluate(function, timeout=_ms(timeout))

    async def visible(self) -> bool:
        """Whether the element is drawn now (a box of some size, not `visibility: hidden`), read at
        once: Playwright's screenshot and scroll of one that is not wait their whole timeout."""
        return await self._locator.is_visible()

    async def area(self, *, timeout: float) -> tuple[float, float, float, float] | None:
        """The element's box (x, y, width, height) in CSS pixels of the top page's viewport,
        wherever the element is (in an iframe too), scrolled into view first; None when it has
        no box (not displayed)."""
        await self._locator.scroll_into_view_if_needed(timeout=_ms(timeout))
        box = await self._locator.bounding_box(timeout=_ms(timeout))
        return None if box is None else (box["x"], box["y"], box["width"], box["height"])

    async def run_script(self, function: str, *, timeout: float) -> Any:
        """A user's script on this element: its result in JSON values only (`_AS_JSON`), or
        UNDEFINED when it returned nothing."""
        return _script_value(
            await self._locator.evaluate(_user_script(function, on_element=True), timeout=_ms(timeout))
        )

    async def aria_snapshot(self, *, depth: int | None) -> str:
        return await self._locator.aria_snapshot(mode="ai", depth=depth)


_handles: weakref.WeakValueDictionary[int, PageHandle] = weakref.WeakValueDictionary()
"""Each page's handle while anything holds it, by the page's id (a handle holds its page, so that
id names no other page meanwhile). Keyed by the page itself, weakly, every page ever opened
stayed: the handle, a value, held its own key."""


def page_handle(page: Page) -> PageHandle:
    """The one handle of a Playwright page (the same object every time)."""
    handle = _handles.get(id(page))
    if handle is None:
        handle = _handles[id(page)] = PageHandle(page)
    return handle


@dataclass(frozen=True, slots=True)
class Navigated:
    """What `PageHandle.navigate` found."""

    status: int | None
    """The HTTP status of the document (None: no response)."""
    frame_moved: str | None = None
    """A step back or forward that was an iframe's own: the URL that iframe shows now."""
    loading: bool = False
    """The document is parsed and shown, but its load event had not come after `LOAD_GRACE`: an
    image, script or frame it asked for is still on its way."""
    resent: str | None = None
    """A reload of a page that a form's POST (or another method with a body) answered: that
    method, for the browser sent the request again, its data with it (`Page.reload` asks no one
    first, as a browser asks its user). Back and forward show such a page from the cache."""


class PageHandle:
    """One page (tab) of a browser context."""

    __slots__ = ("__weakref__", "page")

    def __init__(self, page: Page) -> None:
        self.page = page

    @property
    def url(self) -> str:
        return self.page.url

    def frame_urls(self) -> list[str]:
        """The URLs of the page's iframes, at any depth (as Playwright last heard: no round trip)."""
        return [frame.url for frame in self.page.frames[1:]]

    def is_closed(self) -> bool:
        return self.page.is_closed()

    @property
    def viewport(self) -> tuple[int, int] | None:
        size = self.page.viewport_size
        return (size["width"], size["height"]) if size else None

    # events (each returns its disposer)
    def on_close(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self.page, "close", lambda _page: handler())

    def on_crash(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self.page, "crash", lambda _page: handler())

    def on_download(self, handler: Callable[[DownloadHandle], None]) -> Disposer:
        return _listen(
            self.page, "download", lambda d: handler(DownloadHandle(d)) if isinstance(d, Download) else None
        )

    def on_load(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self.page, "load", lambda _page: handler())

    def on_new_document(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self.page, "domcontentloaded", lambda _page: handler())

    def on_frame_navigated(self, handler: Callable[[], None]) -> Disposer:
        """An iframe of the page (at any depth) that had a document loaded another, or reloaded.
        Not told: an iframe's first document (a new iframe's elements are new to everyone) and a
        move to another #fragment of the same page (Playwright says nothing of which navigations
        stay in their document: a pushState in an iframe is told as a new document)."""
        seen: weakref.WeakKeyDictionary[Frame, str] = weakref.WeakKeyDictionary(
            {frame: frame.url for frame in self.page.frames[1:]}  # loaded before it was listened to
        )

        def navigated(frame: Frame) -> None:
            if frame == self.page.main_frame:
                return
            before, seen[frame] = seen.get(frame), frame.url
            if before is None or (before != frame.url and _unfragmented(before) == _unfragmented(frame.url)):
                return
            handler()

        return _listen(self.page, "framenavigated", navigated)

    def on_navigated(self, handler: Callable[[], None]) -> Disposer:
        """The main frame navigated (a new document is on its way)."""

        def navigated(frame: Frame) -> None:
            if frame == self.page.main_frame:
                handler()

        return _listen(self.page, "framenavigated", navigated)

    # reading
    async def opener(self) -> PageHandle | None:
        opener = await self.page.opener()
        return page_handle(opener) if opener is not None else None

    async def title(self) -> str:
        return await self.page.title()

    async def aria_snapshot(self, *, depth: int | None) -> str:
        return await self.page.aria_snapshot(mode="ai", depth=depth)

    async def password_values(self) -> list[str]:
        """The values of the password fields of the page and its iframes (in open shadow roots
        too), the empty ones left out. An iframe that went away meanwhile has none; the page's
        own document going (a navigation) is Playwright's error, as its snapshot's would be."""
        found = await asyncio.gather(
            *(frame.evaluate(_PASSWORDS) for frame in self.page.frames), return_exceptions=True
        )
        if isinstance(found[0], BaseException):
            raise found[0]
        return [value for values in found if isinstance(values, list) for value in values]

    def element(self, page_ref: str) -> ElementHandle:
        return ElementHandle(self.page.locator(f"aria-ref={page_ref}"))

    async def shows_text(self, text: str) -> bool:
        """Whether `text` is visible in the page or in any of its iframes (Playwright's text
        locators look in one frame only: an iframe's text had never appeared, nor gone)."""
        page = self.page
        for frame in page.frames:
            try:
                if await frame.get_by_text(text).filter(visible=True).count():
                    return True
            except PlaywrightError:
                if frame is page.main_frame or page.is_closed():
                    raise  # the tab closed, or its browser went away
                # an iframe that went away meanwhile
        return False

    async def wait_for_text(self, text: str, *, shown: bool, timeout: float) -> None:
        """Wait until `text` is visible (`shown`) or visible nowhere, in the page and its iframes;
        Playwright's TimeoutError after `timeout` seconds, as its own waits raise."""
        try:
            async with asyncio.timeout(timeout):  # a look a stuck iframe holds up counts too
                while await self.shows_text(text) != shown:
                    await asyncio.sleep(TEXT_POLL)
        except TimeoutError:
            raise PlaywrightTimeoutError(
                f"Timeout {_ms(timeout):g}ms exceeded waiting for text {text!r}"
            ) from None

    # acting
    async def press_key(self, key: str) -> None:
        await self.page.keyboard.press(key)

    async def screenshot(
        self, *, full_page: bool, image_type: Literal["png", "jpeg"], quality: int | None, timeout: float
    ) -> bytes:
        return await self.page.screenshot(
            full_page=full_page, type=image_type, quality=quality, timeout=_ms(timeout)
        )

    async def capture(
        self,
        clip: tuple[float, float, float, float],
        *,
        scale: float,
        image_type: Literal["png", "jpeg"],
        quality: int | None,
    ) -> bytes:
        """An image of `clip` (x, y, width, height in CSS pixels of the document) scaled by `scale`,
        straight from the browser (CDP `Page.captureScreenshot`; Playwright's screenshots do not scale)."""
        session = await self.page.context.new_cdp_session(self.page)
        x, y, width, height = clip
        params: dict[str, Any] = {
            "format": image_type,
            "clip": {"x": x, "y": y, "width": width, "height": height, "scale": scale},
            "captureBeyondViewport": True,
        }
        if quality is not None:
            params["quality"] = quality
        try:
            shot = await session.send("Page.captureScreenshot", params)
        finally:
            with contextlib.suppress(Exception):
                await session.detach()
        return base64.b64decode(shot["data"])

    async def evaluate(self, function: str, arg: Any = None) -> Any:
        return await self.page.evaluate(function, arg)

    async def run_script(self, function: str) -> Any:
        """A user's script in the page: its result in JSON values only (`_AS_JSON`), or UNDEFINED
        when it returned nothing."""
        return _script_value(await self.page.evaluate(_user_script(function, on_element=False)))

    async def navigate(
        self, action: Literal["goto", "back", "forward", "reload"], url: str, *, timeout: float
    ) -> Navigated:
        """Navigate and wait for the load: for the document within `timeout`, then for the rest
        of the page (its images, scripts, frames) up to `LOAD_GRACE` more (`Navigated`).

        A navigation that fails on the network returns once the browser's error page has replaced
        the document and loaded (up to `ERROR_PAGE_TIMEOUT`): that commit comes a moment after the
        failure, and Playwright reports the tab's next navigation as interrupted by it, and each
        one after that by the one before (microsoft/playwright#35944)."""
        ms = _ms(timeout)
        deadline = asyncio.get_running_loop().time() + timeout
        error_page = asyncio.Event()

        def committed(frame: Frame) -> None:
            if frame == self.page.main_frame and frame.url.startswith(ERROR_PAGE):
                error_page.set()

        dispose = _listen(self.page, "framenavigated", committed)
        try:
            if action == "goto":
                response = await self.page.goto(url, timeout=ms, wait_until="domcontentloaded")
            elif action in ("back", "forward"):
                stepped = await self._through_history(action, timeout)
                if isinstance(stepped, str):
                    return Navigated(None, stepped)
                response = stepped
            else:
                response = await self.page.reload(timeout=ms, wait_until="domcontentloaded")
        except PlaywrightError as exc:
            if "net::ERR_" in str(exc) and "net::ERR_ABORTED" not in str(exc):

                async def error_page_loaded() -> None:
                    await error_page.wait()
                    await self.page.wait_for_load_state("load")

                with contextlib.suppress(TimeoutError, PlaywrightError):
                    await asyncio.wait_for(error_page_loaded(), ERROR_PAGE_TIMEOUT)
            raise
        finally:
            dispose()
        status = response.status if response is not None else None
        method = response.request.method if response is not None else "GET"
        resent = method if action == "reload" and method not in ("GET", "HEAD") else None
        grace = min(deadline, asyncio.get_running_loop().time() + LOAD_GRACE)
        if action in ("back", "forward"):  # a page restored whole from the cache fires no load event
            return Navigated(status, loading=not await self._loaded(grace, whole=True))
        try:  # no round trip for a page loaded already: Playwright knows it
            await self.page.wait_for_load_state(
                "load", timeout=_ms(max(grace - asyncio.get_running_loop().time(), 0.001))
            )
        except PlaywrightTimeoutError:
            return Navigated(status, loading=True, resent=resent)
        except PlaywrightError:
            if self.page.is_closed():
                raise
        return Navigated(status, resent=resent)

    async def _through_history(
        self, action: Literal["back", "forward"], timeout: float
    ) -> Response | str | None:
        """Go back or forward, then wait for the document to be loaded. Playwright's own wait for
        the load event would last until the timeout for a page the browser restores from its
        back/forward cache: that page is whole at its commit and fires no load event. Browsers
        Playwright launches have that cache off; the user's Chrome, a browser reached over CDP
        and a grid's have it on. So Playwright waits for the commit only, and the page says when
        it is loaded (at once when it is restored whole). A step of an iframe's own gives the URL
        that iframe shows now."""
        deadline = asyncio.get_running_loop().time() + timeout
        go = self.page.go_back if action == "back" else self.page.go_forward
        step = await self._history_step(action)
        if step == "blank start":
            return None  # nothing to go back to: the caller says so
        if step == "other url":
            response = await go(timeout=_ms(timeout), wait_until="commit")
            await self._loaded(deadline)
            return response
        going = asyncio.ensure_future(go(timeout=_ms(timeout), wait_until="commit"))
        # The step may be an iframe's own (joint session history): the iframe moves and the page
        # does not, and Playwright waits for the page until the timeout. An iframe whose document
        # changes before the page's does is that step (a page's new document brings new iframes
        # only after its commit).
        framed: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        def navigated(frame: Frame) -> None:
            if frame != self.page.main_frame and not framed.done():
                framed.set_result(frame.url)

        dispose = _listen(self.page, "framenavigated", navigated)
        moved: set[asyncio.Future[Any]] = {going, framed}
        try:
            await asyncio.wait(moved, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            going.cancel()
            raise
        finally:
            dispose()
        if framed.done() and not going.done():
            going.cancel()  # Playwright's wait for the page, which stays
            return framed.result()
        framed.cancel()
        response = await going  # its timeout comes with ours, if neither moved
        await self._loaded(deadline)
        return response

    async def _history_step(self, action: Literal["back", "forward"]) -> str:
        """Where a step back or forward goes: "same url" (an iframe's own step, or a pushState that
        kept the URL), "blank start" (back to the blank page a new tab starts on, which Playwright
        opens before it loads the tab's first page: not a page to go back to), else "other url"
        (also when the browser does not say)."""
        try:
            session = await self.page.context.new_cdp_session(self.page)
        except PlaywrightError:
            return "other url"
        try:
            history = await session.send("Page.getNavigationHistory")
        except PlaywrightError:
            return "other url"
        finally:
            with contextlib.suppress(PlaywrightError):
                await session.detach()
        entries, now = history["entries"], history["currentIndex"]
        to = now - 1 if action == "back" else now + 1
        if not 0 <= to < len(entries):
            return "other url"
        if to == 0 and entries[0]["url"] == "about:blank" and entries[now]["url"] != "about:blank":
            return "blank start"
        return "same url" if entries[to]["url"] == entries[now]["url"] else "other url"

    async def _loaded(self, deadline: float, *, whole: bool = False) -> bool:
        """Once the page that committed says it is parsed (`whole`: loaded), by `deadline`: a
        timeout raises, except with `whole`, which returns False then (the page is usable)."""
        left = max(deadline - asyncio.get_running_loop().time(), 0.001)
        try:
            await asyncio.wait_for(self.page.evaluate(_LOADED, whole), left)
        except PlaywrightError:
            if self.page.is_closed():
                raise
            # The page went on elsewhere (a script sent it on) once it had committed.
        except TimeoutError:
            if not whole:
                raise
            return False
        return True

    async def set_viewport(self, width: int, height: int) -> None:
        await self.page.set_viewport_size({"width": width, "height": height})

    async def bring_to_front(self) -> None:
        await self.page.bring_to_front()

    async def close(self) -> None:
        await self.page.close()


# -- contexts and browsers -------------------------------------------------------------------------


class ContextHandle:
    """A browser context: the pages that share cookies and storage."""

    __slots__ = ("_browser", "_context")

    def __init__(self, context: BrowserContext, browser: BrowserHandle | None) -> None:
        self._context = context
        self._browser = browser

    @property
    def browser(self) -> BrowserHandle | None:
        return self._browser

    @property
    def pages(self) -> list[PageHandle]:
        return [page_handle(p) for p in self._context.pages]

    def on_page(self, handler: Callable[[PageHandle], None]) -> Disposer:
        return _listen(self._context, "page", lambda page: handler(page_handle(page)))

    def on_dialog(self, handler: Callable[[PageHandle | None, DialogHandle], None]) -> Disposer:
        """`handler(page, dialog)` for every dialog of the context's pages. While a listener is
        registered, Playwright leaves dialogs open for us to handle: registered on the context, it
        is in place before any page of it exists, so a dialog a new page opens at once (a popup's
        confirm() as it loads) is not answered by Playwright before the page is known as a tab."""
        return _listen(
            self._context,
            "dialog",
            lambda dialog: handler(page_handle(dialog.page) if dialog.page else None, DialogHandle(dialog)),
        )

    def on_close(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self._context, "close", lambda _context: handler())

    async def new_page(self) -> PageHandle:
        return page_handle(await self._context.new_page())

    async def new_cdp_session(self, page: PageHandle) -> CdpSession:
        return CdpSession(await self._context.new_cdp_session(page.page))

    async def route_navigations(
        self,
        refuses: Callable[[PageHandle | None, str, bool], bool],
        urls: str | re.Pattern[str] = "**/*",
        refuses_request: Callable[[str], bool] = lambda _url: False,
    ) -> Callable[[], Awaitable[None]]:
        """Abort top-level and frame navigations that `refuses(page, url, in_frame)` refuses
        (`page` None: the first navigation of a new tab, whose page does not exist yet;
        `in_frame`: a frame inside the page navigates, not the page itself), and the pages' other
        requests that `refuses_request(url)` refuses, checking requests to `urls` only (the others
        never leave the driver); returns the undo."""

        async def handle(route: Any) -> None:
            request = route.request
            if not request.is_navigation_request():
                if refuses_request(request.url):
                    await route.abort("blockedbyclient")
                    return
            else:
                try:
                    frame: Frame | None = request.frame
                except PlaywrightError:  # a popup's first request comes before its frame
                    frame = None
                page = page_handle(frame.page) if frame is not None else None
                in_frame = frame is not None and frame.parent_frame is not None
                if refuses(page, request.url, in_frame):
                    await route.abort("blockedbyclient")
                    return
            await route.fallback()

        await self._context.route(urls, handle)

        async def undo() -> None:
            with contextlib.suppress(PlaywrightError):
                await self._context.unroute(urls, handle)

        return undo

    async def save_storage_state(self, path: str) -> dict[str, Any]:
        state: dict[str, Any] = dict(await self._context.storage_state(path=path))
        return state

    async def close(self) -> None:
        await self._context.close()


async def driver_answers(playwright: Playwright, timeout: float) -> bool:
    """Whether Playwright's driver answers: the cheapest call that goes to it and back. One that
    was killed (or ran out of memory) takes every browser it drove with it, and tells nothing."""
    try:
        request = await asyncio.wait_for(playwright.request.new_context(), timeout)
    except Exception:
        return False
    with contextlib.suppress(Exception):
        await request.dispose()
    return True


class BrowserHandle:
    """A browser tabpilot launched or connected to, through `playwright`'s driver."""

    __slots__ = ("_browser", "_playwright")

    def __init__(self, browser: Browser, playwright: Playwright) -> None:
        self._browser = browser
        self._playwright = playwright

    async def driver_answers(self, timeout: float = 5.0) -> bool:
        """Whether the driver this browser is driven through still answers (`driver_answers`)."""
        return await driver_answers(self._playwright, timeout)

    @property
    def contexts(self) -> list[ContextHandle]:
        return [ContextHandle(c, self) for c in self._browser.contexts]

    @property
    def version(self) -> str:
        return self._browser.version

    def is_connected(self) -> bool:
        return self._browser.is_connected()

    def on_disconnected(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self._browser, "disconnected", lambda _browser: handler())

    async def new_context(self, options: BrowserOptions) -> ContextHandle:
        context = await self._browser.new_context(
            **_context_options(options), storage_state=options.storage_state or None
        )
        await _prepare_context(context, options, storage=False)
        return ContextHandle(context, self)

    async def new_cdp_session(self) -> CdpSession:
        return CdpSession(await self._browser.new_browser_cdp_session())

    async def close(self) -> None:
        await self._browser.close()


def _context_options(options: BrowserOptions) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if options.viewport is not None:
        found["viewport"] = {"width": options.viewport[0], "height": options.viewport[1]}
    if options.user_agent:
        found["user_agent"] = options.user_agent
    if options.ignore_https_errors:
        found["ignore_https_errors"] = True
    return found


def _proxy(options: BrowserOptions) -> Any:
    if not options.proxy_server:
        return None
    proxy: dict[str, str] = {"server": options.proxy_server}
    if options.proxy_bypass:
        proxy["bypass"] = options.proxy_bypass
    return proxy


async def _prepare_context(context: BrowserContext, options: BrowserOptions, *, storage: bool) -> None:
    for source in options.init_script_sources():
        await context.add_init_script(script=source)
    if storage and options.storage_state:
        await context.set_storage_state(options.storage_state)
