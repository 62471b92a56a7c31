"""The main API mix for bench/load.py: what people's browsers and CLIs do all day.

Each user holds the owner's token (PX_TOKEN) and, with think time 0.5–1.5 s, mostly reads (issue
list, one issue with its runs, tasks, projects, agents, daemons) and sometimes writes (create an
issue, comment, change a status). Issue numbers to read come from PX_ISSUES (seeded by load.py).
"""

from __future__ import annotations

import os
import random

from locust import between, task
from locust.contrib.fasthttp import FastHttpUser

TOKEN = os.environ["PX_TOKEN"]
ISSUES = [int(n) for n in os.environ.get("PX_ISSUES", "1").split(",")]
STATUSES = ("todo", "in_progress", "in_review", "todo")


class Person(FastHttpUser):
    wait_time = between(0.5, 1.5)
    # The server answers in milliseconds; a request this slow is a failure, not a figure.
    network_timeout = 30.0
    connection_timeout = 10.0

    def on_start(self) -> None:
        self.headers = {"Authorization": f"Bearer {TOKEN}"}

    @task(6)
    def list_issues(self) -> None:
        self.client.get("/api/issues", headers=self.headers, name="GET /api/issues")

    @task(4)
    def one_issue(self) -> None:
        n = random.choice(ISSUES)
        self.client.get(f"/api/issues/{n}", headers=self.headers, name="GET /api/issues/{n}")
        self.client.get(f"/api/issues/{n}/runs", headers=self.headers, name="GET /api/issues/{n}/runs")

    @task(3)
    def list_tasks(self) -> None:
        self.client.get("/api/tasks?limit=50", headers=self.headers, name="GET /api/tasks")

    @task(2)
    def projects_agents_daemons(self) -> None:
        self.client.get("/api/projects", headers=self.headers, name="GET /api/projects")
        self.client.get("/api/agents", headers=self.headers, name="GET /api/agents")
        self.client.get("/api/daemons", headers=self.headers, name="GET /api/daemons")

    @task(1)
    def create_issue(self) -> None:
        self.client.post("/api/issues", json={"title": "load test issue", "body": "made by bench/load.py"},
                         headers=self.headers, name="POST /api/issues")

    @task(1)
    def comment(self) -> None:
        n = random.choice(ISSUES)
        self.client.post(f"/api/issues/{n}/comments", json={"body": "a comment from the load test"},
                         headers=self.headers, name="POST /api/issues/{n}/comments")

    @task(1)
    def change_status(self) -> None:
        n = random.choice(ISSUES)
        self.client.patch(f"/api/issues/{n}", json={"status": random.choice(STATUSES)}, headers=self.headers,
                          name="PATCH /api/issues/{n}")
