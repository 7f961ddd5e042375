"""A user signing in with a browser, for the OAuth tests: ``python user_agent.py URL`` (as
``$BROWSER``) follows the authorization server's redirects, fills its sign-in and consent forms
(login ``alice``), and finally requests the client's loopback ``redirect_uri`` with the code, as
a browser would. Each run appends a line to ``$USER_AGENT_LOG`` (that URL) before that request
and one to ``$USER_AGENT_LOG.answers`` (the listener's status and body) after it."""

from __future__ import annotations

import html.parser
import http.cookiejar
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


class _Form(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and self.action is None:
            self.action = a.get("action", "")
        elif tag == "input" and a.get("name"):
            self.fields[a["name"]] = a.get("value", "")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def sign_in(url: str, login: str = "alice") -> str:
    """Follow ``url`` to the final redirect that leaves the authorization server."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())
    origin = urllib.parse.urlsplit(url)
    data: bytes | None = None
    for _ in range(20):
        try:
            response = opener.open(urllib.request.Request(url, data=data), timeout=10)
            status, location, body = response.status, None, response.read().decode()
        except urllib.error.HTTPError as exc:
            status, location, body = exc.code, exc.headers.get("Location"), exc.read().decode()
        if location:
            url = urllib.parse.urljoin(url, location)
            data = None
            if urllib.parse.urlsplit(url).netloc != origin.netloc:
                return url  # back to the client
            continue
        if status != 200:
            raise RuntimeError(f"{status} at {url}: {body[:500]}")
        form = _Form()
        form.feed(body)
        if form.action is None:
            raise RuntimeError(f"no form at {url}: {body[:500]}")
        fields = dict(form.fields)
        if "login" in fields or ("prompt" in fields and fields["prompt"] == "login"):
            fields.update(login=login, password="any")
        url = urllib.parse.urljoin(url, form.action)
        data = urllib.parse.urlencode(fields).encode()
    raise RuntimeError("too many redirects")


if __name__ == "__main__":
    final = sign_in(sys.argv[1])
    if os.environ.get("USER_AGENT_LOG"):
        with open(os.environ["USER_AGENT_LOG"], "a", encoding="utf-8") as fh:
            fh.write(final + "\n")
    with urllib.request.urlopen(final, timeout=10) as done:  # the client's loopback listener
        answer = f"{done.status} {done.read().decode()}"
    if os.environ.get("USER_AGENT_LOG"):
        with open(os.environ["USER_AGENT_LOG"] + ".answers", "a", encoding="utf-8") as fh:
            fh.write(answer + "\n")
