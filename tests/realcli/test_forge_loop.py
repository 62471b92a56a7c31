"""The forge loop with a real agent CLI (issue 22 Tests: "a real CLI at least once"): Claude Code,
sandboxed, against its scripted model server, in a worktree of the person's folder whose `origin`
is the GitHub stand-in. Its branch is pushed and the PR opened; a review requesting changes comes
back by webhook; the follow-up resumes the CLI's session with the review's comments in its prompt
(the model is shown them), and its push updates the same PR.
"""

from __future__ import annotations

from forgestand.fixtures import forge_standin_factory  # noqa: F401  (fixture)

from .scenario import git, wait_until


def test_real_claude_answers_a_review_on_its_pull_request(scenario, forge_standin_factory):  # noqa: F811
    s = scenario("claude")
    forge = forge_standin_factory("github")
    repo = forge.create_repo("octo/app", files={"README.md": "# myrepo\n", s.cli.instruction_file: "# Team rules\n"})
    folder = s.root / "mine"
    git(s.root, "clone", "-q", forge.authed_url(repo.path), str(folder))
    git(folder, "remote", "set-url", "origin", repo.clone_url)  # no token in the person's folder
    conn = s.server.api("POST", "/api/forges", {"kind": "github", "name": "gh", "base_url": forge.base_url,
                                                "api_url": forge.api_url, "credential": forge.token})
    project = s.project(folder, "worktree")
    issue, run = s.assign(project)
    task = s.wait(run["id"])
    pr = wait_until(lambda: (p := s.server.api("GET", f"/api/tasks/{task['id']}/pr")).get("number") and p, 60,
                    what="the PR to open")
    first_head = forge.branch_head(repo.path, pr["branch"])
    assert "edited by claude in " in git(repo.bare, "show", f"{first_head}:README.md")

    asked = len(s.model.conversation())
    s.model.answer = "Renamed as asked."
    forge.submit_review(repo.path, pr["number"], "changes_requested", body="Close, but not yet.",
                        comments=[("README.md", 2, "Say which worktree, in words.")])
    delivery = forge.webhook("review", repo.path, pr["number"])
    assert forge.deliver(f"{s.server.url}/api/forges/{conn['id']}/webhook", delivery, secret=conn["webhook_secret"]) == 200
    follow = wait_until(lambda: (r := s.server.runs(issue["number"])) and len(r) > 1 and r[-1], 30,
                        what="the follow-up")
    assert follow["pull_request_id"] == pr["id"] and "README.md:2" in follow["prompt"]
    follow = s.wait(follow["id"])
    shown = s.model.conversation()[asked]
    # The resumed session: the model sees its earlier turn and the review's comment.
    assert "Say which worktree, in words." in shown.text and "All done: README.md" in shown.text
    head = wait_until(lambda: (h := forge.branch_head(repo.path, pr["branch"])) != first_head and h, 60,
                      what="the follow-up's push")
    assert git(repo.bare, "merge-base", "--is-ancestor", first_head, head) == ""  # the same branch, continued
    assert forge.pr(repo.path, pr["number"]).head_sha == head and len(forge.prs(repo.path)) == 1
