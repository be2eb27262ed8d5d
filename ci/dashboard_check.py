"""Open the dashboard's pages in headless Chromium and check them (for
ci/dashboard.sh, which cuts the network off first):

    python ci/dashboard_check.py URL_OF_SITE --benchmark NAME --commits FILE --shots DIR

For each page (index.html, regressions.html): it loads; no request fails
(a network error or an HTTP status of 400 or more); nothing is written to
the console as an error and no script throws. On index.html, the plot of
benchmark NAME is drawn with a point for every commit listed in FILE (one
hash a line). A screenshot of each page goes into DIR. Exit status 1 with
the reasons when a check fails.

Chromium is driven through its DevTools protocol over a pipe
(--remote-debugging-pipe: JSON messages ended by a NUL byte on file
descriptors 3 and 4), so nothing but Chromium itself is needed.
"""
import argparse
import base64
import json
import os
import pathlib
import select
import subprocess
import sys
import tempfile
import time

PAGES = ("index.html", "regressions.html")
SHOWN = 20  # problems printed; the count says how many more
# What the page itself says about the named benchmark's plot.
PLOT_QUERY = """(() => {
  const plot = document.querySelector(`svg.plot[data-benchmark="${NAME}"]`);
  if (!plot) return {found: false};
  const points = [...plot.querySelectorAll("circle[data-commit]")];
  return {found: true, series: plot.querySelectorAll("g.series").length,
          points: points.length, commits: [...new Set(points.map(p => p.dataset.commit))]};
})()"""


class Browser:
    """Headless Chromium and one page, spoken to over the DevTools pipe."""

    def __init__(self, profile: str):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        command = ("exec chromium --headless=new --no-sandbox --disable-gpu --no-first-run "
                   "--disable-background-networking --disable-component-update --disable-sync "
                   f"--remote-debugging-pipe --user-data-dir={profile} about:blank "
                   f"3<&{to_chrome_r} 4>&{from_chrome_w}")
        self.process = subprocess.Popen(["bash", "-c", command], pass_fds=(to_chrome_r, from_chrome_w),
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer, self.events, self.last_id, self.session = b"", [], 0, None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=1400, height=1100,
                  deviceScaleFactor=1, mobile=False)

    def _read(self, timeout: float):
        """The next message, or None after ``timeout`` seconds."""
        while b"\0" not in self.buffer:
            ready, _, _ = select.select([self.from_chrome], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise SystemExit("chromium closed its pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, **params):
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read(60)
            if reply is None:
                raise SystemExit(f"no answer to {method} in 60 s")
            if reply.get("id") == self.last_id:
                if "error" in reply:
                    raise SystemExit(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def settle(self, event: str, quiet: float = 1.0, limit: float = 60):
        """Wait for ``event``, then until no message came for ``quiet`` s."""
        deadline, seen = time.time() + limit, False
        while time.time() < deadline:
            seen = seen or any(e.get("method") == event for e in self.events)
            message = self._read(quiet)
            if message is None and seen:
                return
            if message is not None:
                self.events.append(message)
        raise SystemExit(f"no {event} within {limit} s")

    def close(self):
        try:
            self.call("Browser.close")
        except SystemExit:
            pass
        self.process.wait(timeout=30)


def problems_in(events) -> list:
    """Failed requests, console errors and uncaught exceptions among the
    DevTools events of one page load."""
    urls, found = {}, []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            urls[params["requestId"]] = params["request"]["url"]
        elif method == "Network.loadingFailed":
            found.append(f"request failed: {urls.get(params['requestId'], '?')} ({params['errorText']})")
        elif method == "Network.responseReceived" and params["response"]["status"] >= 400:
            found.append(f"HTTP {params['response']['status']}: {params['response']['url']}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            found.append(f"script error: {text}")
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            found.append("console error: " + " ".join(str(a.get("value", a.get("description")))
                                                       for a in params["args"]))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"console error: {params['entry']['text']} {params['entry'].get('url', '')}")
    return found


def check_plot(browser: Browser, benchmark: str, commits: list) -> list:
    query = PLOT_QUERY.replace("${NAME}", benchmark)
    plot = browser.call("Runtime.evaluate", expression=query, returnByValue=True)["result"]["value"]
    if not plot["found"]:
        return [f"no plot of {benchmark} in the page"]
    missing = sorted(set(commits) - set(plot["commits"]))
    print(f"  plot of {benchmark}: {plot['series']} series, {plot['points']} points, "
          f"{len(plot['commits'])} commits with a point; {len(commits)} stored")
    return [f"{benchmark}: no point for commit {c}" for c in missing]


def check_page(browser: Browser, url: str, shot: pathlib.Path, benchmark=None, commits=()) -> list:
    browser.events.clear()
    browser.call("Page.navigate", url=url)
    browser.settle("Page.loadEventFired")
    found = problems_in(browser.events)
    if benchmark:
        found += check_plot(browser, benchmark, commits)
    image = browser.call("Page.captureScreenshot", format="png")["data"]
    shot.write_bytes(base64.b64decode(image))
    print(f"{url}: {len(found)} problem(s); screenshot {shot}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", help="the site's URL, ending in /")
    parser.add_argument("--benchmark", required=True, help="the benchmark whose plot to check")
    parser.add_argument("--commits", type=pathlib.Path, required=True,
                        help="a file of the stored commits' hashes, one a line")
    parser.add_argument("--shots", type=pathlib.Path, required=True, help="the screenshots' folder")
    args = parser.parse_args()
    commits = args.commits.read_text().split()
    args.shots.mkdir(parents=True, exist_ok=True)
    problems = []
    with tempfile.TemporaryDirectory() as profile:
        browser = Browser(profile)
        try:
            for page in PAGES:
                named = args.benchmark if page == "index.html" else None
                problems += check_page(browser, args.site + page, args.shots / page.replace(".html", ".png"),
                                       named, commits)
        finally:
            browser.close()
    for problem in problems[:SHOWN]:
        print("  " + problem)
    if len(problems) > SHOWN:
        print(f"  ... and {len(problems) - SHOWN} more")
    print(f"dashboard check: {'FAILED, ' + str(len(problems)) + ' problem(s)' if problems else 'passed'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
