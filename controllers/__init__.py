"""kcontrol's controllers (deployment, replicaset, job, cronjob, ttlafterfinished,
configrestart) and the modules they share (podutil, podcontrol, activepods, conditions, jobutil),
imported as ``kcontrol_controllers`` - the only name they have.

This directory is ``controllers/`` in the repository, but ``controllers`` is not kcontrol's to
take in an application's site-packages: the wheel installs it as ``kcontrol_controllers``
(``sources`` in pyproject.toml), and an editable install maps that name onto this directory
(hack/editable/kcontrol_controllers.py). Imported under any other name - ``controllers``,
found because the repository root is on ``sys.path`` - it would be a second copy of every
module (and of every Prometheus metric and logger name), so that fails here, at once.
Modules inside import each other relatively.
"""

if __name__ != "kcontrol_controllers":
    raise ImportError(
        f"kcontrol's controllers are imported as kcontrol_controllers, not as {__name__!r}"
        " (the directory controllers/ is installed under that name)",
        name=__name__,
    )
