"""What a polling client meets: lists come in the forge's pages with Link headers; conditional GETs
are answered 304 (ETag everywhere, Last-Modified on GitHub); GitHub counts its rate limit without 304s."""

from __future__ import annotations

import re

import httpx2 as httpx

from forgestand.state import git

AUTH = {"github": lambda t: {"Authorization": f"Bearer {t}"}, "gitlab": lambda t: {"PRIVATE-TOKEN": t},
        "gitea": lambda t: {"Authorization": f"token {t}"}, "forgejo": lambda t: {"Authorization": f"token {t}"}}
LIST = {"github": "/repos/acme/many/pulls?state=all", "gitlab": "/projects/acme%2Fmany/merge_requests?state=all",
        "gitea": "/repos/acme/many/pulls?state=all", "forgejo": "/repos/acme/many/pulls?state=all"}
DEFAULT_PAGE = {"github": 30, "gitlab": 20, "gitea": 30, "forgejo": 30}


def test_lists_come_in_the_forges_pages(any_standin):
    s = any_standin
    s.create_repo("acme/many")
    sha = s.commit_on_server("acme/many", "b0", {"f": "0"})
    for n in range(DEFAULT_PAGE[s.kind] + 2):
        git(s.repo("acme/many").bare, "update-ref", f"refs/heads/b{n}", sha)  # many branches, one commit: quick
        s.open_pr("acme/many", f"b{n}", title=f"PR {n}")
    with httpx.Client(headers=AUTH[s.kind](s.token), timeout=10) as client:
        first = client.get(s.api_url + LIST[s.kind])
        assert len(first.json()) == DEFAULT_PAGE[s.kind]
        next_url = re.search(r'<([^>]+)>; rel="next"', first.headers["link"]).group(1)
        assert next_url.startswith(s.base_url)
        second = client.get(next_url)
        assert len(second.json()) == 2 and "next" not in second.headers.get("link", "")
        numbers = {p.get("number", p.get("iid")) for p in first.json() + second.json()}
        assert numbers == set(range(1, DEFAULT_PAGE[s.kind] + 3))
        if s.kind == "gitlab":
            assert first.headers["x-total"] == str(DEFAULT_PAGE[s.kind] + 2) and first.headers["x-next-page"] == "2"
        # a conditional GET of the same page: 304 while nothing changed, counted like any call
        calls = len(s.calls)
        same = client.get(s.api_url + LIST[s.kind], headers={"If-None-Match": first.headers["etag"]})
        assert same.status_code == 304 and same.content == b"" and len(s.calls) == calls + 1
        s.close_pr("acme/many", DEFAULT_PAGE[s.kind] + 2)  # the newest: on the first page
        assert client.get(s.api_url + LIST[s.kind], headers={"If-None-Match": first.headers["etag"]}).status_code == 200


def test_github_if_modified_since_and_rate_limit(github_standin):
    s = github_standin
    s.create_repo("acme/r")
    s.commit_on_server("acme/r", "b", {"f": "1"})
    pr = s.open_pr("acme/r", "b")
    with httpx.Client(headers=AUTH["github"](s.token), timeout=10) as client:
        url = f"{s.api_url}/repos/acme/r/pulls/{pr.number}"
        first = client.get(url)
        used = int(first.headers["x-ratelimit-used"])
        again = client.get(url, headers={"If-Modified-Since": first.headers["last-modified"]})
        assert again.status_code == 304
        tagged = client.get(url, headers={"If-None-Match": first.headers["etag"]})
        assert tagged.status_code == 304 and int(tagged.headers["x-ratelimit-used"]) == used  # 304s are free
        s.submit_review("acme/r", pr.number, "approved")
        pr.updated_at = "2099-01-01T00:00:00Z"  # the review moved updated_at; make it visibly later than `first`
        assert client.get(url, headers={"If-Modified-Since": first.headers["last-modified"]}).status_code == 200
        assert int(client.get(url).headers["x-ratelimit-remaining"]) == 5000 - used - 2


def test_an_exhausted_rate_limit_is_refused_as_the_forge_refuses_it(any_standin):
    s = any_standin
    s.create_repo("acme/r")
    url = s.api_url + ("/projects/acme%2Fr" if s.kind == "gitlab" else "/repos/acme/r")
    with httpx.Client(headers=AUTH[s.kind](s.token), timeout=10) as client:
        s.limit_rate(30)
        limited = client.get(url)
        if s.kind == "github":
            assert limited.status_code == 403 and limited.headers["x-ratelimit-remaining"] == "0"
            assert limited.json()["message"].startswith("API rate limit exceeded")
            assert int(limited.headers["x-ratelimit-reset"]) > 0
        else:
            assert limited.status_code == 429 and 0 < int(limited.headers["retry-after"]) <= 30
        s.limit_rate(0)
        assert client.get(url).status_code == 200


def test_github_refuses_a_draft_where_the_repository_has_none(github_standin):
    s = github_standin
    s.create_repo("acme/free", draft_prs=False)
    s.commit_on_server("acme/free", "b", {"f": "1"})
    with httpx.Client(headers=AUTH["github"](s.token), timeout=10) as client:
        body = {"title": "t", "head": "b", "base": "main", "draft": True}
        refused = client.post(s.api_url + "/repos/acme/free/pulls", json=body)
        assert refused.status_code == 422
        assert refused.json()["errors"][0]["message"] == "Draft pull requests are not supported in this repository."
        assert client.post(s.api_url + "/repos/acme/free/pulls", json={**body, "draft": False}).status_code == 201
