#!/usr/bin/python3
"""The page of `attnsweep report` in a real headless browser (Debian's chromium, installed by
tests/deps.sh --test): it loads with no console message of its own (no script error), makes no
network request (Chromium's net log: every URL request the page initiates, the browser's own
background requests left out), every figure of the page is in the rendered DOM as an inline PNG,
and its screenshot is not blank (pixel variance). The same checks run on a page with a remote
image and a failing script, which they must reject, so the test can fail.

Exit 77 (ctest: skipped) with a message when chromium is absent; CI installs it.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_report  # noqa: E402  (the tiny sweep and the page)

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or \
    shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--disable-extensions", "--disable-sync", "--hide-scrollbars"]


def chromium(page, tmp, *extra):
    """Runs chromium on file://page; returns (stdout, stderr, net log path)."""
    netlog = os.path.join(tmp, "net-%d.json" % len(os.listdir(tmp)))
    prof = tempfile.mkdtemp(dir=tmp)
    p = subprocess.run([CHROMIUM, *FLAGS, "--user-data-dir=" + prof, "--enable-logging=stderr",
                        "--v=0", "--log-net-log=" + netlog, *extra, "file://" + page],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout, p.stderr, netlog


def console_messages(stderr):
    """The page's console messages (Chromium logs them as CONSOLE lines)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def page_requests(netlog):
    """URLs the page requested: URL_REQUEST_START_JOB events whose initiator is an origin (the
    page's, "null" for file://), not Chromium's own ("not an origin"), and not data:/file:."""
    with open(netlog) as fh:
        text = fh.read().rstrip()
    if not text.endswith("}"):  # a log cut at exit: close the events array
        text = text.rstrip(",") + "]}"
    log = json.loads(text)
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    out = []
    for e in log.get("events", []):
        prm = e.get("params") or {}
        if names.get(e["type"]) != "URL_REQUEST_START_JOB" or "url" not in prm:
            continue
        if prm.get("initiator") == "not an origin":
            continue
        if not prm["url"].startswith(("data:", "file:")):
            out.append(prm["url"])
    return out


def screenshot_stats(png):
    """(standard deviation of the grey levels, fraction of pixels that are not background)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    img = plt.imread(png)[..., :3].mean(axis=2)
    return float(img.std()), float((abs(img - img.max()) > 0.05).mean())


def check(page, tmp, figures):
    """The problems of page in the browser (an empty list: none). One Chromium run: the DOM,
    the console, the net log and the screenshot."""
    problems = []
    shot = os.path.join(tmp, "shot-%d.png" % len(os.listdir(tmp)))
    dom, err, netlog = chromium(page, tmp, "--dump-dom", "--screenshot=" + shot,
                                "--window-size=1200,1600")
    msgs = console_messages(err)
    if msgs:
        problems.append("console messages: %s" % msgs[:3])
    reqs = page_requests(netlog)
    if reqs:
        problems.append("network requests: %s" % reqs[:3])
    for fid in figures:
        if not re.search(r'<figure id="%s"[^>]*>\s*<img [^>]*src="data:image/png;base64,' % fid,
                         dom):
            problems.append("figure %s missing from the DOM" % fid)
    sd, ink = screenshot_stats(shot)
    if sd < 0.02 or ink < 0.01:
        problems.append("blank screenshot (grey sd %.3g, %.2g%% non-background)" % (
            sd, 100 * ink))
    return problems


def main():
    if not CHROMIUM:
        print("SKIPPED: chromium is not installed (tests/deps.sh --test installs it: "
              "apt-get install chromium)")
        return 77
    tmp = tempfile.mkdtemp(prefix="as_browser_")
    try:
        h5 = test_report.make_results(tmp)
        page = os.path.join(tmp, "report.html")
        p = test_report.report([h5], page)
        assert p.returncode == 0, p.stderr
        with open(page, encoding="utf-8") as fh:
            figures = re.findall(r'<figure id="(fig-\d+)"', fh.read())
        n = int(re.search(r"(\d+) figures", p.stdout).group(1))
        fails = []
        if len(figures) != n or n < 3:
            fails.append("the page lists %d figures, the command wrote %d" % (len(figures), n))
        fails += check(page, tmp, figures)
        # the checks reject a page that loads a remote image and runs a failing script
        bad = os.path.join(tmp, "bad.html")
        with open(bad, "w") as fh:
            fh.write('<!DOCTYPE html><html><body><img src="http://192.0.2.1/x.png">'
                     '<script>undefined_function();</script></body></html>')
        got = check(bad, tmp, ["fig-1"])
        for want in ("console messages", "network requests", "figure fig-1 missing",
                     "blank screenshot"):
            if not any(g.startswith(want) for g in got):
                fails.append("the check missed '%s' on the bad page (found: %s)" % (want, got))
        for f in fails:
            print("FAIL: " + f)
        if not fails:
            print("ok: the report loads in chromium with no console message and no network "
                  "request, %d figures in the DOM, a non-blank screenshot; the bad page is "
                  "rejected" % n)
        return 1 if fails else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
