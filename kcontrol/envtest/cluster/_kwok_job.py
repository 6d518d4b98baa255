"""What a Job's container does in the test cluster, where kwok runs no containers.

kwok decides from the pod spec, once, and writes the decision on the pod as two annotations
(the *decide* stage, a Go template kwok renders: no webhook or watcher of ours is involved);
later stages select on them and play the container's end. A test can read the decision off
the pod, or set :data:`EXIT_CODE_ANNOTATION` itself (in a pod template) to skip the parsing.

The decision concerns pods whose ``restartPolicy`` is ``Never`` or ``OnFailure`` (Job pods;
``Always`` pods keep running, as before) and that carry no ``kwok.kcontrol.io/behavior``
label. Only the first container is read; it decides for the whole pod, and the other
containers end with it, with exit code 0.

**What is understood.** The program is the container's ``command`` followed by its ``args``.
When it is a shell (``sh``, ``bash``, ``ash``, ``dash``, ``ksh``, ``zsh``, any directory) with
an option word ending in ``c`` (``-c``, ``-ec``, ...) followed by a script, the script is read
as statements separated by ``;``, newlines or ``&&``; otherwise the whole program is one
statement. First, ``$JOB_COMPLETION_INDEX``, ``${JOB_COMPLETION_INDEX}`` and
``$(JOB_COMPLETION_INDEX)`` are replaced by the pod's :data:`COMPLETION_INDEX_ANNOTATION`
(which the Job controller sets, and which the env var comes from; empty when absent). Then,
in order, until one of them ends the program:

- ``exit N`` ends with code ``N`` modulo 256 (``exit`` alone: 0);
- ``false``, ``/bin/false``, ``/usr/bin/false`` end with code 1;
- ``sleep infinity`` (or ``inf``) never ends: the container keeps running;
- ``sleep N`` with ``N`` a number and an optional unit ``s``, ``m``, ``h``, ``d`` adds ``N``
  to the container's run time (so a long sleep keeps it running that long);
- ``if [ A OP B ]`` (also ``[[ ... ]]`` or ``test ...``) with ``OP`` one of ``=``, ``==``,
  ``!=``, ``-eq``, ``-ne`` (quotes around ``A`` and ``B`` are dropped; ``-eq``/``-ne``
  compare integers, and are false when either side is not one) opens a branch: the
  statements up to ``else`` or ``fi`` (a leading ``then``/``else`` is stripped from a
  statement) run only when the test holds, those after ``else`` only when it does not. Any
  other condition is false. Branches do not nest.
- anything else (``echo``, ``true``, a program of its own) succeeds and is skipped.

A program that ends without any of them exits 0, and so does a container with no
``command`` or ``args`` at all (its image's entrypoint is unknown), except the ``pause`` image
(any registry, any tag), which never ends. ``&&`` is read as ``;``: right while the commands
before it succeed. ``||``, pipes, loops, functions and other variables are not understood.

For example, ``sh -c 'if [ "$JOB_COMPLETION_INDEX" = "2" ]; then exit 1; fi'`` exits 1 for
index 2 and 0 for every other; ``sh -c "sleep 5; exit 3"`` exits 3 after 5 s.

**What it does then.** The pod becomes Running and Ready as any other (after the ready delay);
after its run time (:data:`RUN_TIME_ANNOTATION`, the sum of its sleeps, or 1 s) the first
container ends with the decided code:

- 0: the pod is ``Succeeded``, each container ``terminated`` with exit code 0, reason
  ``Completed``;
- not 0, ``restartPolicy: Never``: the pod is ``Failed``, the first container ``terminated``
  with that exit code and reason ``Error``;
- not 0, ``restartPolicy: OnFailure``: the container restarts - ``restartCount`` + 1,
  ``lastState.terminated`` with that exit code and reason ``Error``, running (and ready) again
  - and the pod stays ``Running``; it fails again after each run time, without the kubelet's
  back-off.

Both terminal states carry the ``Ready``/``ContainersReady`` conditions ``False`` with reason
``PodCompleted``, as a kubelet writes them. A deleted Job pod that still has finalizers (the
Job controller's tracking finalizer) and has not ended is killed after its delete delay: pod
``Failed``, every container ``terminated`` with exit code 137, reason ``Error``; kwok removes it
once its finalizers are gone.
"""

from __future__ import annotations

__all__ = [
    "COMPLETION_INDEX_ANNOTATION",
    "DECIDE_TEMPLATE",
    "EXIT_CLASS",
    "EXIT_CODE_ANNOTATION",
    "EXIT_NEVER",
    "KILLED_STATUS",
    "RESTARTED_STATUS",
    "RUN_TIME_ANNOTATION",
    "SUCCEEDED_OR_FAILED_STATUS",
]

EXIT_CODE_ANNOTATION = "kwok.kcontrol.io/exit-code"
"""The decided exit code of the pod's first container (decimal), or :data:`EXIT_NEVER`."""

EXIT_NEVER = "none"
"""The :data:`EXIT_CODE_ANNOTATION` of a container that never ends."""

RUN_TIME_ANNOTATION = "kwok.kcontrol.io/run-time"
"""How long the container runs before it ends (a Go duration; default 1 s). Written by the
decide stage when the program sleeps and the pod does not set it already."""

COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
"""The Indexed Job's completion index, on each of its pods (set by the Job controller)."""


def _keys(body: str) -> str:
    """Prefix a Go template with the annotation keys it uses, as template variables."""
    return (
        f'{{{{- $exitKey := "{EXIT_CODE_ANNOTATION}" -}}}}\n'
        f'{{{{- $runTimeKey := "{RUN_TIME_ANNOTATION}" -}}}}\n'
        f'{{{{- $indexKey := "{COMPLETION_INDEX_ANNOTATION}" -}}}}\n'
        f'{{{{- $never := "{EXIT_NEVER}" -}}}}\n' + body
    )


# Rendered by kwok against the pod (a JSON map) with sprig's functions; its result is merged
# into the pod's metadata. Regular expressions are RE2, in Go raw strings (backquotes).
DECIDE_TEMPLATE = _keys(
    r"""
{{- $c := index .spec.containers 0 -}}
{{- $argv := concat (default (list) $c.command) (default (list) $c.args) -}}
{{- $annotations := default (dict) .metadata.annotations -}}
{{- $index := toString (default "" (get $annotations $indexKey)) -}}
{{- $var := `\$\(JOB_COMPLETION_INDEX\)|\$\{JOB_COMPLETION_INDEX\}|\$JOB_COMPLETION_INDEX\b` -}}
{{- $statements := list (regexReplaceAll $var (join " " $argv) $index) -}}
{{- if and (ge (len $argv) 3)
      (regexMatch `^(ba|da|a|k|z)?sh$` (base (toString (index $argv 0))))
      (regexMatch `^-[a-z]*c$` (toString (index $argv 1))) -}}
{{- $script := regexReplaceAll $var (toString (index $argv 2)) $index -}}
{{- $statements = regexSplit `;|\n|&&` $script -1 -}}
{{- end -}}
{{- $exit := "" -}}
{{- if regexMatch `(^|/)pause(:|@|$)` (toString $c.image) }}{{ $exit = $never }}{{ end -}}
{{- $ms := 0 -}}
{{- $skip := false -}}
{{- range $statements -}}
{{- if ne $exit "" }}{{ break }}{{ end -}}
{{- $s := trim . -}}
{{- if regexMatch `^then(\s|$)` $s }}{{ $s = trim (trimPrefix "then" $s) }}{{ end -}}
{{- if regexMatch `^else(\s|$)` $s -}}
{{- $skip = not $skip -}}
{{- $s = trim (trimPrefix "else" $s) -}}
{{- end -}}
{{- if regexMatch `^if\s` $s -}}
{{- $holds := false -}}
{{- if regexMatch `^if\s+(\[\[?|test)\s` $s -}}
{{- $test := regexReplaceAll `^if\s+(\[\[?|test)\s+(.*?)\s*(\]\]?)?$` $s "${2}" -}}
{{- $words := regexFindAll `"[^"]*"|'[^']*'|[^\s"']+` $test -1 -}}
{{- if eq (len $words) 3 -}}
{{- $a := trimAll "\"'" (index $words 0) -}}
{{- $op := index $words 1 -}}
{{- $b := trimAll "\"'" (index $words 2) -}}
{{- $integers := and (regexMatch `^-?[0-9]+$` $a) (regexMatch `^-?[0-9]+$` $b) -}}
{{- if or (eq $op "=") (eq $op "==") }}{{ $holds = eq $a $b -}}
{{- else if eq $op "!=" }}{{ $holds = ne $a $b -}}
{{- else if eq $op "-eq" }}{{ $holds = and $integers (eq (atoi $a) (atoi $b)) -}}
{{- else if eq $op "-ne" }}{{ $holds = and $integers (ne (atoi $a) (atoi $b)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $skip = not $holds -}}
{{- else if eq $s "fi" }}{{ $skip = false -}}
{{- else if $skip -}}
{{- else if regexMatch `^exit(\s+[0-9]+)?$` $s -}}
{{- $exit = toString (mod (atoi (default "0" (regexFind `[0-9]+` $s))) 256) -}}
{{- else if regexMatch `^(/usr)?(/bin/)?false$` $s }}{{ $exit = "1" -}}
{{- else if regexMatch `^(/usr)?(/bin/)?sleep\s+(inf|infinity)$` $s }}{{ $exit = $never -}}
{{- else if regexMatch `^(/usr)?(/bin/)?sleep\s+[0-9]+(\.[0-9]+)?[smhd]?$` $s -}}
{{- $unit := get (dict "" 1000 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000)
      (regexFind `[smhd]$` $s) -}}
{{- $ms = add $ms (int (mulf (float64 (regexFind `[0-9]+(\.[0-9]+)?` $s)) $unit)) -}}
{{- end -}}
{{- end -}}
{{- if eq $exit "" }}{{ $exit = "0" }}{{ end -}}
annotations:
  {{ $exitKey }}: {{ $exit | Quote }}
{{- if and (gt $ms 0) (not (hasKey $annotations $runTimeKey)) }}
  {{ $runTimeKey }}: {{ printf "%dms" $ms | Quote }}
{{- end }}
"""
)

EXIT_CLASS = (
    f'(.metadata.annotations["{EXIT_CODE_ANNOTATION}"] // "")'
    f' | if . == "{EXIT_NEVER}" then "never"'
    ' elif test("^[0-9]+$") then (if tonumber == 0 then "zero" else "nonzero" end)'
    ' elif . == "" then "undecided" else "invalid" end'
)
"""A jq expression classing the pod's decision: ``undecided``, ``never``, ``zero``,
``nonzero`` or ``invalid`` (an annotation set by hand that is not a number: never played)."""


def _terminated(exit_code: str, reason: str) -> str:
    return f"""\
  state:
    terminated:
      exitCode: {exit_code}
      finishedAt: {{{{ $now | Quote }}}}
      reason: {reason}
      startedAt: {{{{ dig "state" "running" "startedAt" $now $status | Quote }}}}"""


_COMPLETED_CONDITIONS = """\
conditions:
- lastTransitionTime: {{ $now | Quote }}
  reason: PodCompleted
  status: "False"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  reason: PodCompleted
  status: "False"
  type: ContainersReady
"""

_EACH_CONTAINER = """\
containerStatuses:
{{ range $i, $c := .spec.containers }}
{{ $status := default (dict) (index (default (list) $root.status.containerStatuses) $i) }}
- image: {{ $c.image | Quote }}
  name: {{ $c.name | Quote }}
  ready: false
  restartCount: {{ default 0 $status.restartCount }}
  started: false
"""

SUCCEEDED_OR_FAILED_STATUS = _keys(
    """\
{{ $now := Now }}
{{ $root := . }}
{{ $code := atoi (index .metadata.annotations $exitKey) }}
"""
    + _COMPLETED_CONDITIONS
    + _EACH_CONTAINER
    + _terminated(
        "{{ if eq $i 0 }}{{ $code }}{{ else }}0{{ end }}",
        "{{ if and (eq $i 0) (ne $code 0) }}Error{{ else }}Completed{{ end }}",
    )
    + """
{{ end }}
phase: {{ if eq $code 0 }}Succeeded{{ else }}Failed{{ end }}
"""
)
"""The pod's end: ``Succeeded`` for exit code 0, else ``Failed`` (``restartPolicy: Never``)."""

KILLED_STATUS = (
    """\
{{ $now := Now }}
{{ $root := . }}
"""
    + _COMPLETED_CONDITIONS
    + _EACH_CONTAINER
    + _terminated("137", "Error")
    + """
{{ end }}
phase: Failed
"""
)
"""A deleted pod's containers killed (after the grace period, as a kubelet would)."""

RESTARTED_STATUS = _keys(
    """\
{{ $now := Now }}
{{ $root := . }}
{{ $code := atoi (index .metadata.annotations $exitKey) }}
containerStatuses:
{{ range $i, $c := .spec.containers }}
{{ $status := default (dict) (index (default (list) $root.status.containerStatuses) $i) }}
{{ if eq $i 0 }}
- image: {{ $c.image | Quote }}
  name: {{ $c.name | Quote }}
  ready: true
  restartCount: {{ add (default 0 $status.restartCount) 1 }}
  started: true
  lastState:
    terminated:
      exitCode: {{ $code }}
      finishedAt: {{ $now | Quote }}
      reason: Error
      startedAt: {{ dig "state" "running" "startedAt" $now $status | Quote }}
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ else }}
- {{ YAML $status 1 }}
{{ end }}
{{ end }}
"""
)
"""The first container failed and ``restartPolicy: OnFailure`` restarted it; the others run on."""
