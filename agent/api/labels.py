"""Label and annotation keys the agent reads and writes: its whole vocabulary on objects.

Labels follow Kubernetes' recommended labels (``app.kubernetes.io/*``); the agent's own keys live
under the CRD's group ``heumsi.github.io``. Every other module names a key through this one, so
``docs/reference`` can list them all (``KEYS``).
"""

from __future__ import annotations

AGENT_NAME = "gitops-agent"
"""Value of ``app.kubernetes.io/managed-by`` and the server-side apply field manager."""

MANAGED_BY = "app.kubernetes.io/managed-by"
NAME_LABEL = "app.kubernetes.io/name"
INSTANCE_LABEL = "app.kubernetes.io/instance"
SOURCE_LABEL = "heumsi.github.io/source"
"""Label on Git-applied Applications naming the source (repository and path) that holds them:
an agent prunes only Applications of its own source, and never applies one another source
holds (``sources.other_source``); relabelling hands it over."""
APPLICATION_LABEL = "heumsi.github.io/application"
"""Label on children naming the owning Application (same namespace)."""
SOURCE_COMMIT = "heumsi.github.io/source-commit"
SOURCE_PATH = "heumsi.github.io/source-path"
"""Annotations on Git-applied Applications: commit SHA and file the content was applied from."""
REPOSITORY = "heumsi.github.io/repository"
"""Annotation on Git-applied Applications: the identity of the repository they were applied from
(``repository.identity``: one value for every URL form of one repository); a source that
refuses an Application another source holds names it (``sources.refuse``)."""
CONTENT_HASH = "heumsi.github.io/content-hash"
"""Annotation on Git-applied Applications: a digest of the user's labels, annotations and spec,
so that removing a label or annotation in Git is a change too (a subset comparison of desired
and live cannot see a removal)."""
CREATED_BY_AGENT = "heumsi.github.io/created-by"
"""Label on namespaces the agent created (it never deletes a namespace)."""
PRUNE_ANNOTATION = "heumsi.github.io/prune"
"""``disabled`` on an Application or child: never pruned (see ``engine.guards``)."""
RECONCILE_ANNOTATION = "heumsi.github.io/reconcile"
"""``disabled`` on an Application or child: left exactly as it is (see ``engine.suspend``)."""
RECONCILE_REQUESTED_AT = "heumsi.github.io/reconcile-requested-at"
"""Annotation on an Application asking for a pass now; its value is an opaque token."""

ADOPT_ANNOTATION = "heumsi.github.io/adopt"
"""``"true"`` on an Application in Git: objects standing in its children's slots that no
controller holds (made by hand, ``kubectl create``, an earlier install) are adopted; the
migration switch for hand-made setups (``plan.ownership``)."""
WANTED_BY_PREFIX = "heumsi.github.io/wanted-by-"
"""Prefix of the annotation a source writes on an Application another source holds while its
own Git also has it (``<prefix><digest of the source id>``: ``source id file``): the holder never
prunes it while the annotation is there (``sources.wanted_elsewhere``)."""

KEPT_SELECTOR = "heumsi.github.io/kept-selector"
"""Annotation on a Deployment the agent took over whose immutable selector it kept
(``kinds.selector``): the selector kept (``app=web``). Later passes keep it while it is there; an
agent's own Deployment without it whose selector differs is recreated as before."""

PASS_REQUESTED_AT = "heumsi.github.io/pass-requested-at"
"""Annotation on the leader-election Lease: a standby that received a push webhook writes a new
token (UTC time and its identity) to ask the leader for a pass (``kube.election``)."""

FILES_DIGEST = "heumsi.github.io/files-digest"
"""Annotation on an Application's pod template: a digest of its files' contents from Git, so a
changed file rolls the pods (Kubernetes does not restart pods for a changed ConfigMap)."""

SCHEDULE_LABEL = "heumsi.github.io/schedule"
"""Label naming the schedule (``spec.schedules.<name>``) on its CronJob, its Jobs and their pods,
whose pods never carry the labels the Application's Service selects on."""
TASK_LABEL = "heumsi.github.io/task"
"""Label on a task's Job and its pod: the task's name (a key of ``spec.tasks``)."""
TASK_DIGEST = "heumsi.github.io/task-digest"
"""Label on a task's Job: the digest of what it runs (``job.task_digest``); the Job's name ends in
its first 8 characters."""

KEYS: tuple[tuple[str, str, str], ...] = (
    (MANAGED_BY, "label", f"`{AGENT_NAME}` on every object the agent applies"),
    (NAME_LABEL, "label", "the Application's name, on its children"),
    (INSTANCE_LABEL, "label", "the Application's name, on children and pods; selected on"),
    (APPLICATION_LABEL, "label", "the owning Application's name, on children and pods; selected on"),
    (SOURCE_LABEL, "label", "the source id that owns a Git-applied Application"),
    (CREATED_BY_AGENT, "label", "on namespaces the agent created"),
    (SOURCE_COMMIT, "annotation", "commit an Application was applied from"),
    (SOURCE_PATH, "annotation", "file an Application was applied from"),
    (REPOSITORY, "annotation", "identity of the repository an Application came from"),
    (CONTENT_HASH, "annotation", "digest of an Application's labels, annotations and spec"),
    (PRUNE_ANNOTATION, "annotation", "`disabled`: never pruned"),
    (RECONCILE_ANNOTATION, "annotation", "`disabled`: left exactly as it is (suspend, hot-fix)"),
    (RECONCILE_REQUESTED_AT, "annotation", "a token asking for a pass now (`reconcile`)"),
    (ADOPT_ANNOTATION, "annotation", '`"true"` on an Application: adopt uncontrolled objects in its children\'s slots'),
    (KEPT_SELECTOR, "annotation", "on a Deployment taken over: the selector it keeps (`app=web`)"),
    (WANTED_BY_PREFIX + "<digest>", "annotation", "another source also has this Application in Git: not pruned"),
    (PASS_REQUESTED_AT, "annotation", "on the leader Lease: a new token forwards a push webhook to the leader"),
    (SCHEDULE_LABEL, "label", "the schedule's name, on its CronJob, Jobs and pods (never selected by the Service)"),
    (FILES_DIGEST, "annotation", "digest of the files from Git, on the pod template: a change rolls the pods"),
    (TASK_LABEL, "label", "the task's name, on a task's Job and its pod"),
    (TASK_DIGEST, "label", "digest of what a task's Job runs, on the Job"),
)
"""(key, label or annotation, what it means) for every key: the reference table's rows."""
