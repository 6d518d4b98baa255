"""``syncCronJob`` on a fake client and a fake clock: upstream's TestControllerV2SyncCronJob,
row by row under upstream's names.

Upstream's rows also list an expected size of the active list, but its test checks it only on
status writes that ``syncCronJob`` never makes (they happen in ``sync``): those numbers were
never enforced. Here the active list is checked on the CronJob the sync changed whenever the
sync asks for a status write; the rows where upstream's unenforced number is not what its
code does say so (``want_active``). Likewise upstream checks only that an expected error came;
here no error may come unless expected (``want_err`` where upstream's row says otherwise).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from cronjob_fixtures import (
    ERROR_SCHEDULE,
    ERROR_TIME_ZONE,
    EVERY_HOUR,
    JUST_AFTER_THE_HOUR,
    JUST_AFTER_THE_PRIOR_HOUR,
    JUST_BEFORE_THE_HOUR,
    JUST_BEFORE_THE_NEXT_HOUR,
    JUST_BEFORE_THE_PRIOR_HOUR,
    NEW_YORK,
    ON_THE_HOUR,
    TOP_OF_THE_HOUR,
    WEEK_AFTER_THE_HOUR,
    FakeControls,
    Fixture,
    complete,
    cron_job,
    ts,
)

from kcontrol.errors import AlreadyExists, BadRequest, Forbidden
from kcontrol_controllers.cronjob._jobs import job_from_template, job_reference
from kcontrol_controllers.cronjob._times import NEXT_SCHEDULE_DELTA

SHORT_DEAD = 10
MEDIUM_DEAD = 2 * 60 * 60
LONG_DEAD = 1000000
NO_DEAD = -12345
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)
MS = timedelta(milliseconds=1)

NAMESPACE_TERMINATING = Forbidden(
    "unable to create new content in namespace default because it is being terminated",
    details={
        "causes": [
            {
                "reason": "NamespaceTerminating",
                "message": "namespace default is being terminated",
                "field": "metadata.namespace",
            }
        ]
    },
)


@dataclass
class Case:
    # the CronJob's spec
    concurrency_policy: str = ""
    suspend: bool = False
    schedule: str = ""
    time_zone: str | None = None
    deadline: int = 0
    successful_jobs_history_limit: int | None = None
    # its status
    ran_previously: bool = False
    still_active: bool = False
    # the environment
    cronjob_creation_time: datetime | None = None
    job_creation_time: datetime | None = None
    last_schedule_time: datetime | None = None
    now: datetime | None = None
    job_create_error: Exception | None = None
    job_get_error: Exception | None = None
    # expectations
    expect_create: bool = False
    expect_delete: bool = False
    expect_completed: bool = False
    expect_active: int = 0
    expected_warnings: int = 0
    expect_err: bool = False
    expect_requeue_after: bool = False
    expected_requeue_duration: timedelta = timedelta(0)
    expect_update_status: bool = False
    job_still_not_found_in_lister: bool = False
    job_present_in_cj_active_status: bool = False
    want_active: int | None = None
    """The active list's size where upstream's (unenforced) ``expectActive`` differs."""
    want_err: bool | None = None
    """Whether the sync fails, where upstream's ``expectErr`` is false but its test only
    checks that an expected error came."""


CASES: dict[str, Case] = {
    "never ran, not valid schedule, A": Case(
        concurrency_policy="Allow",
        schedule=ERROR_SCHEDULE,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expected_warnings=1,
        job_present_in_cj_active_status=True,
    ),
    "never ran, not valid schedule, F": Case(
        concurrency_policy="Forbid",
        schedule=ERROR_SCHEDULE,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expected_warnings=1,
        job_present_in_cj_active_status=True,
    ),
    "never ran, not valid schedule, R": Case(
        concurrency_policy="Forbid",
        schedule=ERROR_SCHEDULE,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expected_warnings=1,
        job_present_in_cj_active_status=True,
    ),
    "never ran, not valid time zone": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        time_zone=ERROR_TIME_ZONE,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expected_warnings=1,
        job_present_in_cj_active_status=True,
    ),
    "never ran, not time, A": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "never ran, not time, F": Case(
        concurrency_policy="Forbid",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "never ran, not time, R": Case(
        concurrency_policy="Replace",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "never ran, not time in zone": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        time_zone=NEW_YORK,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "never ran, is time, A": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "never ran, is time, F": Case(
        concurrency_policy="Forbid",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "never ran, is time, R": Case(
        concurrency_policy="Replace",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "never ran, is time in zone, but time zone disabled": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        time_zone=NEW_YORK,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "never ran, is time in zone": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        time_zone=NEW_YORK,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "never ran, is time in zone, but TZ is also set in schedule": Case(
        concurrency_policy="Allow",
        schedule="TZ=UTC " + ON_THE_HOUR,
        time_zone=NEW_YORK,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expected_warnings=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        want_active=1,
    ),
    "never ran, is time, suspended": Case(
        concurrency_policy="Allow",
        suspend=True,
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        job_present_in_cj_active_status=True,
    ),
    "never ran, is time, past deadline": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=SHORT_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR + MINUTE * (SHORT_DEAD + 1),
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE - MINUTE * (SHORT_DEAD + 1) + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "never ran, is time, not past deadline": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=LONG_DEAD,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "prev ran but done, not time, A": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "prev ran but done, not time, F": Case(
        concurrency_policy="Forbid",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "prev ran but done, not time, R": Case(
        concurrency_policy="Replace",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "prev ran but done, is time, A": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "prev ran but done, is time, create job failed, A": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        job_create_error=AlreadyExists('jobs.batch "" already exists'),
        expect_err=False,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
        # The Job the GET answers is ours and no longer in the active list: it goes back.
        want_active=1,
    ),
    "prev ran but done, is time, job not present in CJ active status, create job failed, A": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        job_create_error=AlreadyExists('jobs.batch "" already exists'),
        expect_err=False,
        expect_update_status=True,
        job_present_in_cj_active_status=False,
        want_active=1,
    ),
    "prev ran but done, is time, F": Case(
        concurrency_policy="Forbid",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "prev ran but done, is time, R": Case(
        concurrency_policy="Replace",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "prev ran but done, is time, suspended": Case(
        concurrency_policy="Allow",
        suspend=True,
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "prev ran but done, is time, past deadline": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=SHORT_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "prev ran but done, is time, not past deadline": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=LONG_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "still active, not time, A": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "still active, not time, F": Case(
        concurrency_policy="Forbid",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "still active, not time, R": Case(
        concurrency_policy="Replace",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "still active, is time, A": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=2,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "still active, is time, F": Case(
        concurrency_policy="Forbid",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "still active, is time, R": Case(
        concurrency_policy="Replace",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_delete=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "still active, is time, get job failed, R": Case(
        concurrency_policy="Replace",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        job_get_error=BadRequest("request is invalid"),
        expect_active=1,
        expected_warnings=1,
        job_present_in_cj_active_status=True,
        want_err=True,  # the Job to replace cannot be read: retried
    ),
    "still active, is time, suspended": Case(
        concurrency_policy="Allow",
        suspend=True,
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_active=1,
        job_present_in_cj_active_status=True,
    ),
    "still active, is time, past deadline": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=SHORT_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "still active, is time, not past deadline": Case(
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=LONG_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=2,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    # Controller should fail to schedule these, as there are too many missed starting times
    # and either no deadline or a too long deadline.
    **{
        f"prev ran but done, long overdue, not past deadline, {policy[0]}": Case(
            concurrency_policy=policy,
            schedule=ON_THE_HOUR,
            deadline=LONG_DEAD,
            ran_previously=True,
            job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
            now=WEEK_AFTER_THE_HOUR,
            expect_create=True,
            expect_active=1,
            expected_warnings=1,
            expect_requeue_after=True,
            expected_requeue_duration=HOUR + NEXT_SCHEDULE_DELTA,
            expect_update_status=True,
            job_present_in_cj_active_status=True,
            expect_completed=True,
        )
        for policy in ("Allow", "Replace", "Forbid")
    },
    **{
        f"prev ran but done, long overdue, no deadline, {policy[0]}": Case(
            concurrency_policy=policy,
            schedule=ON_THE_HOUR,
            deadline=NO_DEAD,
            ran_previously=True,
            job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
            now=WEEK_AFTER_THE_HOUR,
            expect_create=True,
            expect_active=1,
            expected_warnings=1,
            expect_requeue_after=True,
            expected_requeue_duration=HOUR + NEXT_SCHEDULE_DELTA,
            expect_update_status=True,
            job_present_in_cj_active_status=True,
            expect_completed=True,
        )
        for policy in ("Allow", "Replace", "Forbid")
    },
    **{
        f"prev ran but done, long overdue, past {size} deadline, {policy[0]}": Case(
            concurrency_policy=policy,
            schedule=ON_THE_HOUR,
            deadline=deadline,
            ran_previously=True,
            job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
            now=WEEK_AFTER_THE_HOUR,
            expect_create=True,
            expect_active=1,
            expect_requeue_after=True,
            expected_requeue_duration=HOUR + NEXT_SCHEDULE_DELTA,
            expect_update_status=True,
            job_present_in_cj_active_status=True,
            expect_completed=True,
        )
        for policy in ("Allow", "Replace", "Forbid")
        for size, deadline in (("medium", MEDIUM_DEAD), ("short", SHORT_DEAD))
    },
    # Tests for time skews: the controller sees job is created, takes no actions
    "this ran but done, time drifted back, F": Case(
        concurrency_policy="Forbid",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        job_creation_time=JUST_AFTER_THE_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        job_create_error=AlreadyExists('jobs.batch "" already exists'),
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
    ),
    # Tests for slow job lister
    **{
        f"this started but went missing, not past deadline, {letter}": Case(
            concurrency_policy=policy,
            schedule=ON_THE_HOUR,
            deadline=LONG_DEAD,
            ran_previously=True,
            still_active=True,
            job_creation_time=TOP_OF_THE_HOUR + 100 * MS,
            now=JUST_AFTER_THE_HOUR + 100 * MS,
            expect_active=1,
            expect_requeue_after=True,
            expected_requeue_duration=HOUR - MINUTE - 100 * MS + NEXT_SCHEDULE_DELTA,
            job_still_not_found_in_lister=True,
            job_present_in_cj_active_status=True,
        )
        for policy, letter in (("Allow", "A"), ("Forbid", "f"), ("Replace", "R"))
    },
    # Tests for slow cronjob list
    **{
        f"this started but is not present in cronjob active list, not past deadline, {letter}": (
            Case(
                concurrency_policy=policy,
                schedule=ON_THE_HOUR,
                deadline=LONG_DEAD,
                ran_previously=True,
                still_active=True,
                job_creation_time=TOP_OF_THE_HOUR + 100 * MS,
                now=JUST_AFTER_THE_HOUR + 100 * MS,
                expect_active=1,
                expect_requeue_after=True,
                expected_requeue_duration=HOUR - MINUTE - 100 * MS + NEXT_SCHEDULE_DELTA,
            )
        )
        for policy, letter in (("Allow", "A"), ("Forbid", "f"), ("Replace", "R"))
    },
    # Tests for @every-style schedule
    "with @every schedule, never ran, not time": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=NO_DEAD,
        cronjob_creation_time=JUST_BEFORE_THE_HOUR,
        job_creation_time=JUST_BEFORE_THE_HOUR,
        now=TOP_OF_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "with @every schedule, never ran, is time": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=NO_DEAD,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
        expect_create=True,
        expect_active=1,
        expect_update_status=True,
    ),
    "with @every schedule, never ran, is time, past deadline": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=SHORT_DEAD,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR + SECOND * (SHORT_DEAD + 1),
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - SECOND * (SHORT_DEAD + 1) + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "with @every schedule, never ran, is time, not past deadline": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=LONG_DEAD,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        now=JUST_BEFORE_THE_HOUR + SECOND * (SHORT_DEAD - 1),
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - SECOND * (SHORT_DEAD - 1) + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "with @every schedule, prev ran but done, not time": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR,
        now=TOP_OF_THE_HOUR,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "with @every schedule, prev ran but done, is time": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR,
        now=TOP_OF_THE_HOUR + HOUR,
        expect_create=True,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "with @every schedule, prev ran but done, is time, past deadline": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=SHORT_DEAD,
        ran_previously=True,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR,
        now=JUST_BEFORE_THE_NEXT_HOUR + SECOND * (SHORT_DEAD + 1),
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - SECOND * (SHORT_DEAD + 1) + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "with @every schedule, still active, not time": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR,
        now=TOP_OF_THE_HOUR,
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - MINUTE + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "with @every schedule, still active, is time": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        last_schedule_time=JUST_BEFORE_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=2,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - 2 * MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "with @every schedule, still active, is time, past deadline": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=SHORT_DEAD,
        ran_previously=True,
        still_active=True,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR,
        now=JUST_BEFORE_THE_NEXT_HOUR + SECOND * (SHORT_DEAD + 1),
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - SECOND * (SHORT_DEAD + 1) + NEXT_SCHEDULE_DELTA,
        job_present_in_cj_active_status=True,
    ),
    "with @every schedule, still active, is time, not past deadline": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=LONG_DEAD,
        ran_previously=True,
        still_active=True,
        cronjob_creation_time=JUST_BEFORE_THE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_THE_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR,
        now=JUST_BEFORE_THE_NEXT_HOUR + SECOND * (SHORT_DEAD - 1),
        expect_create=True,
        expect_active=2,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - SECOND * (SHORT_DEAD - 1) + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
    ),
    "with @every schedule, prev ran but done, long overdue, no deadline": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        cronjob_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        last_schedule_time=JUST_AFTER_THE_HOUR,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=WEEK_AFTER_THE_HOUR,
        expect_create=True,
        expect_active=1,
        expected_warnings=1,
        expect_requeue_after=True,
        expected_requeue_duration=MINUTE + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
    ),
    "with @every schedule, prev ran but done, long overdue, past deadline": Case(
        concurrency_policy="Allow",
        schedule=EVERY_HOUR,
        deadline=SHORT_DEAD,
        ran_previously=True,
        cronjob_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        last_schedule_time=JUST_AFTER_THE_HOUR,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=WEEK_AFTER_THE_HOUR + MINUTE + SECOND * (SHORT_DEAD + 1),
        expect_active=1,
        expect_requeue_after=True,
        expected_requeue_duration=HOUR - SECOND * (SHORT_DEAD + 1) + NEXT_SCHEDULE_DELTA,
        expect_update_status=True,
        job_present_in_cj_active_status=True,
        expect_completed=True,
        # The completed Job leaves the active list and nothing is created.
        want_active=0,
    ),
    "do nothing if the namespace is terminating": Case(
        job_create_error=NAMESPACE_TERMINATING,
        concurrency_policy="Allow",
        schedule=ON_THE_HOUR,
        deadline=NO_DEAD,
        ran_previously=True,
        still_active=True,
        job_creation_time=JUST_AFTER_THE_PRIOR_HOUR,
        now=JUST_AFTER_THE_HOUR,
        expect_active=0,
        expect_requeue_after=False,
        expect_update_status=False,
        expect_err=True,
        job_present_in_cj_active_status=False,
    ),
    **{
        f"set lastsuccessfultime if successfulJobHistoryLimit is {label}": Case(
            successful_jobs_history_limit=limit,
            ran_previously=True,
            schedule=ON_THE_HOUR,
            expect_update_status=True,
            expect_completed=True,
            job_present_in_cj_active_status=True,
        )
        for label, limit in (("zero", 0), ("ten", 10), ("nil", None))
    },
}


def _build(case: Case) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None, list[Any]]:
    """upstream's setup: the cached CronJob, the API server's (``realCJ``), the Job the fake
    GET answers, and the Jobs in the lister."""
    cj = cron_job(
        concurrencyPolicy=case.concurrency_policy,
        suspend=case.suspend,
        schedule=case.schedule,
    )
    if case.time_zone is not None:
        cj["spec"]["timeZone"] = case.time_zone
    if case.successful_jobs_history_limit is not None:
        cj["spec"]["successfulJobsHistoryLimit"] = case.successful_jobs_history_limit
    if case.deadline != NO_DEAD:
        cj["spec"]["startingDeadlineSeconds"] = case.deadline
    real = copy.deepcopy(cj)
    job = None
    jobs = []
    if case.ran_previously:
        cj["metadata"]["creationTimestamp"] = ts(
            case.cronjob_creation_time or JUST_BEFORE_THE_PRIOR_HOUR
        )
        cj["status"]["lastScheduleTime"] = ts(case.last_schedule_time or JUST_AFTER_THE_PRIOR_HOUR)
        assert case.job_creation_time is not None
        job = job_from_template(cj, case.job_creation_time)
        job["metadata"]["uid"] = "1234"
        job["metadata"]["namespace"] = cj["metadata"]["namespace"]
        ref = job_reference(job)
        if case.job_present_in_cj_active_status:
            cj["status"]["active"] = [ref]
        if case.still_active:
            real["status"]["active"] = [ref]
        else:
            complete(job, case.job_creation_time + timedelta(seconds=10))
        if not case.job_still_not_found_in_lister:
            jobs.append(job)
    else:
        cj["metadata"]["creationTimestamp"] = ts(case.cronjob_creation_time or JUST_BEFORE_THE_HOUR)
        assert not case.still_active, "test setup error: this case makes no sense"
    return cj, real, job, jobs


@pytest.mark.parametrize("name", list(CASES))
async def test_sync_cron_job(name: str) -> None:
    case = CASES[name]
    if case.ran_previously and case.job_creation_time is None:
        # upstream's lastSuccessfulTime rows run at Go's zero time, which only their status
        # checks tolerate: give them the times of the others.
        case = Case(**{**case.__dict__, "job_creation_time": JUST_AFTER_THE_PRIOR_HOUR})
    cj, real, job, jobs = _build(case)
    fixture = Fixture(now=case.now or JUST_BEFORE_THE_HOUR)
    FakeControls(
        fixture.client,
        job=job,
        cron_job=real,
        get_error=case.job_get_error,
        create_error=case.job_create_error,
    )
    cj_copy = copy.deepcopy(cj)

    outcome = await fixture.controller.syncer.sync_cron_job(cj_copy, jobs)

    if case.want_err if case.want_err is not None else case.expect_err:
        assert outcome.error is not None
    else:
        assert outcome.error is None, outcome.error
    if case.expect_requeue_after:
        assert outcome.requeue_after == case.expected_requeue_duration.total_seconds()
    if not case.expect_requeue_after and not case.ran_previously:
        assert outcome.requeue_after is None or case.now is None
    assert outcome.update_status is case.expect_update_status

    if case.ran_previously and not case.still_active:
        assert case.job_creation_time is not None
        completion = case.job_creation_time + timedelta(seconds=10)
        assert cj_copy["status"].get("lastSuccessfulTime") == ts(completion)

    created = fixture.server_jobs()  # the creates that succeeded (upstream's jc.Jobs)
    assert len(created) == (1 if case.expect_create else 0)
    for new in created:
        assert new["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "name": cj["metadata"]["name"],
                "uid": cj["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    deletes = fixture.client.actions_for("delete", "jobs")
    assert len(deletes) == (1 if case.expect_delete else 0)

    expected_events = case.expected_warnings
    expected_events += int(case.expect_create) + int(case.expect_delete)
    expected_events += int(case.expect_completed)
    if name == "still active, is time, F":
        expected_events += 1  # the only row that records not scheduling (JobAlreadyActive)
    events = fixture.recorder.events
    assert len(events) == expected_events, events
    assert sum(e.startswith("Warning ") for e in events) == case.expected_warnings, events

    if outcome.update_status:
        want_active = case.want_active if case.want_active is not None else case.expect_active
        assert len(cj_copy["status"].get("active") or []) == want_active
    assert cj_copy is not cj
