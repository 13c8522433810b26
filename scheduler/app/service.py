"""The scheduler as a service: configuration and hot reload, HTTP endpoints, metrics.

`aiosched run` builds one SchedulerService. It owns the Scheduler, the /metrics + health HTTP
server, the config file watcher (and SIGHUP), and the periodic gauges. A reload validates the new
file first; an invalid file is logged, counted (aiosched_config_reloads_total{result="failure"})
and shown in /readyz, and the running profiles stay untouched. A valid one is handed to the
scheduling loop, which swaps it in between two cycles: profiles, extenders, percentages and the
queue's backoff. Fields only a restart applies (leaderElection, clientConnection,
delayCacheUntilActive; profiles/fields.py) keep their running values; a reload that changes them
is logged and counted as result="restart_required", not as a success.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import ssl
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from observability.explain import ExplainStore
from observability.http import (
    ObservabilityServer,
    RequestGuard,
    explain_routes,
    what_if_routes,
)
from observability.logs import V
from observability.metrics import SchedulerMetrics
from observability.recent_attempts import RecentAttempts
from observability.tracing import NOOP_TRACING, Tracing, setup_tracing
from profiles.api import load_config
from profiles.config import ConfigOverrides, ResolvedConfig
from profiles.errors import ConfigInvalidError
from profiles.fields import caveats, restart_required
from profiles.reload import ConfigWatcher
from scheduler.app import gc_tuning
from scheduler.app.feature_gates import feature_info
from scheduler.app.startup import listen_error
from scheduler.app.web_view import WebViewState
from scheduler.client.leaderelection import LeaderElector
from scheduler.client.rest import KubeClient
from scheduler.cycle.profile_set import full_registry, registry_for_config
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.cycle.what_if import WhatIf
from scheduler.framework.errors import FrameworkError
from scheduler.framework.registry import Registry
from scheduler.parallel.pool import (
    DEFAULT_MIN_SECONDS,
    MIN_SPLIT_ROWS,
    FilterPool,
    filter_workers_for,
)
from scheduler.server import zpages
from scheduler.server.webview import web_view_routes

log = logging.getLogger(__name__)


#: leader_election_master_status' name: kube-scheduler's LeaderElectionConfig.Name
#: (cmd/kube-scheduler/app/options/options.go makeLeaderElectionConfig).
ELECTOR_NAME = "kube-scheduler"


class LeadershipLost(RuntimeError):
    """The lease was lost: the process must stop scheduling (and exits, as kube-scheduler)."""


GAUGE_PERIOD_SECONDS = 1.0


class SchedulerService:
    def __init__(
        self,
        *,
        config_path: Path | None,
        http_host: str,
        http_port: int,
        seed: int | None = None,
        tracing_overrides: Mapping[str, str | None] | None = None,
        trace_export_process: bool = False,
        registry: Registry | None = None,
        explain_every_attempt: bool = False,
        explain_recent_attempts: int = 100,
        tune_gc: bool = False,
        config_overrides: ConfigOverrides = (),
        ssl_context: ssl.SSLContext | None = None,
        pod_max_in_unschedulable_seconds: float = 300.0,
        feature_gates: Mapping[str, bool] | None = None,
        flags: Mapping[str, str] | None = None,
        set_verbosity: Callable[[int], None] | None = None,
        trace_ui_url: str | None = None,
        filter_fanout_min_seconds: float = DEFAULT_MIN_SECONDS,
    ) -> None:
        # The estimated Filter cost of a chunk of nodes above which it is split across the
        # filter workers that `parallelism` asks for (scheduler/parallel/pool.py).
        self.filter_fanout_min_seconds = filter_fanout_min_seconds
        self.filter_pool: FilterPool | None = None
        # Process-wide collector settings: for the `aiosched run` process, not embedders.
        self.tune_gc = tune_gc
        # Explain keeps failed attempts (and the success that follows one) unless asked for all.
        self.explain_every_attempt = explain_every_attempt
        self.config_path = config_path
        # Command-line flags over the file, applied at start and again on every reload.
        self.config_overrides = config_overrides
        # HTTPS for the endpoints with this context (given or self-signed), else plain HTTP.
        self.ssl_context = ssl_context
        self.pod_max_in_unschedulable_seconds = pod_max_in_unschedulable_seconds
        # --feature-gates as given over their defaults (restart-only, as upstream's).
        self.feature_gates = dict(feature_gates or {})
        # /flagz: the command line's flags as given or defaulted (`aiosched run` passes them)
        self.flags = dict(flags or {})
        # /debug/flags/v: how a PUT level takes effect (the root logger's level by default)
        self.set_verbosity = set_verbosity if set_verbosity is not None else _set_root_verbosity
        # /configz: the configuration in effect, replaced on every accepted reload
        self.configz = zpages.Configz()
        self.http_host = http_host
        self.http_port = http_port
        self.seed = seed
        self.tracing_overrides = dict(tracing_overrides or {})
        self.trace_export_process = trace_export_process
        self.registry = registry if registry is not None else full_registry()
        self.metrics = SchedulerMetrics()
        self.metrics.set_feature_info(feature_info(self.feature_gates))
        # Pending pods' last attempts, and each profile's last N first-attempt successes.
        self.explain = ExplainStore(recent_per_profile=explain_recent_attempts)
        # The web view's recent attempts, and where it links their traces ({trace_id}).
        self.attempts = RecentAttempts()
        self.trace_ui_url = trace_ui_url
        self.tracing: Tracing = NOOP_TRACING
        self.scheduler: Scheduler | None = None
        self.last_reload_error = ""
        self._watcher: ConfigWatcher | None = None
        self.elector: LeaderElector | None = None
        # The configuration the process started with: restart-only fields keep these values.
        self.running_config: ResolvedConfig | None = None
        # Restart-only fields the file changed since start (empty when it matches).
        self.restart_pending: tuple[str, ...] = ()

    def load_config(self) -> ResolvedConfig:
        """Load and validate the config file (all defaults without one), flags applied."""
        return load_config(
            self.config_path,
            registry_for_config(self.registry),
            self.config_overrides,
            feature_gates=self.feature_gates,
        )

    def load_initial_config(self) -> ResolvedConfig:
        config = self.load_config()
        for note in config.notes:
            log.info("config note", extra={"note": note})
        for caveat in caveats(config):
            log.info("config caveat", extra={"note": caveat})
        return config

    def request_reload(self) -> None:
        """SIGHUP: re-read the config file now."""
        if self._watcher is not None:
            self._watcher.trigger()

    async def reload(self) -> bool:
        """Validate and swap in the config file's current content; False if it was refused."""
        scheduler = self.scheduler
        if scheduler is None:
            return False
        try:
            # read and parsed in a thread: the loop keeps scheduling and answering /healthz
            # while a large or hostile file is read and refused
            config = await asyncio.to_thread(self.load_config)
            profiles = scheduler.build_profiles(config)
        except (ConfigInvalidError, FrameworkError, OSError) as exc:
            self.last_reload_error = str(exc)
            self.metrics.config_reload(False)
            log.error(
                "config reload refused; keeping the running profiles", extra={"error": str(exc)}
            )
            return False
        scheduler.swap_profiles(profiles)
        self.last_reload_error = ""
        running = self.running_config
        self.restart_pending = () if running is None else restart_required(running, config)
        self.configz.set(config if running is None else _in_effect(running, config))
        self.metrics.config_reload(True, restart_required=bool(self.restart_pending))
        if self.restart_pending:
            log.warning(
                "config reloaded, but these fields only take effect after a restart; they keep "
                "their running values",
                extra={"profiles": profiles.names(), "fields": list(self.restart_pending)},
            )
        else:
            log.info("config reloaded", extra={"profiles": profiles.names()})
        return True

    async def _reload_from_watcher(self) -> None:
        await self.reload()

    # ------------------------------------------------------------------------------ health

    def _informers_synced(self) -> tuple[bool, str]:
        if self.scheduler is not None and self.scheduler.synced():
            return True, "ok"
        return False, "informers have not synced yet"

    def _lease_renewed(self) -> tuple[bool, str]:
        """/healthz: a leader that stopped renewing its Lease is wedged (client-go's
        HealthzAdaptor, which kube-scheduler serves as the ``leaderElection`` check)."""
        if self.elector is None:
            return True, "ok"
        healthy, message = self.elector.check()
        return healthy, message or "ok"

    def health_checks(self) -> dict[str, Callable[[], tuple[bool, str]]]:
        return {"leaderElection": self._lease_renewed}

    def readiness_checks(self) -> dict[str, Callable[[], tuple[bool, str]]]:
        return {
            "informer-sync": self._informers_synced,
            "config": self._config_ok,
            "leader-election": self._leading,
        }

    def _config_ok(self) -> tuple[bool, str]:
        if self.last_reload_error:
            return False, f"last config reload failed: {self.last_reload_error}"
        return True, "ok"

    # ----------------------------------------------------------------------------- running

    async def run(
        self,
        client: KubeClient,
        config: ResolvedConfig,
        http_guard: RequestGuard | None = None,
        serving_note: str = "",
    ) -> None:
        """Schedule until cancelled. `http_guard` checks every request to the endpoints but the
        health ones (the secure port's delegated authentication and authorization);
        `serving_note` says how they are served, in the start-up line."""
        self.running_config = config
        self.configz.set(config)
        client.observe_requests(self.metrics.rest_client)
        self.tracing = setup_tracing(
            **self.tracing_overrides,  # type: ignore[arg-type]
            export_process=self.trace_export_process,
        )
        filter_pool = self._filter_pool(config)
        scheduler = Scheduler(
            client,
            config,
            self.registry,
            SchedulerOptions(
                seed=self.seed,
                max_unschedulable_seconds=self.pod_max_in_unschedulable_seconds,
                opportunistic_batching=self.feature_gates.get("OpportunisticBatching", True),
                feature_gates=self.feature_gates,
            ),
            metrics=self.metrics,
            tracing=self.tracing,
            explain=self.explain,
            explain_every_attempt=self.explain_every_attempt,
            cache=filter_pool.cache if filter_pool is not None else None,
        )
        if filter_pool is not None:
            filter_pool.attach(lambda: scheduler.profiles, scheduler.snapshot)
            scheduler.scheduling.filter_fanout = filter_pool
        self.filter_pool = filter_pool
        scheduler.instrumentation.attempts = self.attempts
        self.scheduler = scheduler
        web_view = WebViewState(
            lambda: self.scheduler, self.explain, self.attempts, self.trace_ui_url
        )
        what_if = WhatIf(scheduler, self.registry, self.config_overrides)
        server = ObservabilityServer(
            self.http_host,
            self.http_port,
            metrics=self.metrics,
            health=self.health_checks(),
            ready=self.readiness_checks(),
            debug_routes=explain_routes(self.explain) | web_view_routes(web_view),
            ssl_context=self.ssl_context,
            guard=http_guard,
            debug_post_routes=what_if_routes(what_if.answer, parse_config=what_if.parse_config),
            routes=self.zpage_routes(config),
        )
        try:
            await server.start()
        except OSError as exc:
            await self.tracing.aclose()
            raise listen_error(self.http_host, self.http_port, exc) from None
        if not serving_note:
            serving_note = "TLS" if self.ssl_context is not None else "plain HTTP"
            serving_note += ", bearer tokens checked" if http_guard else ", no authentication"
        print(
            f"aiosched: serving {', '.join(self.served_paths())} on {server.url} ({serving_note})",
            flush=True,
        )
        try:
            async with anyio.create_task_group() as group:
                if config.leader_election.leader_elect:
                    group.start_soon(self._lead_then_schedule, client, config, name="leading")
                else:
                    group.start_soon(scheduler.run, name="scheduler")
                group.start_soon(self._update_gauges, scheduler, name="gauges")
                if self.tune_gc:
                    group.start_soon(self._freeze_after_sync, scheduler, name="gc-freeze")
                if self.config_path is not None:
                    self._watcher = ConfigWatcher(self.config_path, self._reload_from_watcher)
                    group.start_soon(self._watcher.run, name="config-watcher")
        finally:
            # shielded: a cancelled scope would otherwise cancel every await of the shutdown
            with anyio.CancelScope(shield=True):
                await server.stop()
                await self.tracing.aclose()
                if filter_pool is not None:
                    filter_pool.close()

    def _filter_pool(self, config: ResolvedConfig) -> FilterPool | None:
        """The filter workers `parallelism` asks for on this machine (none: Filter in process).
        They start only when a cycle's Filter is estimated to cost more than
        `filter_fanout_min_seconds`; the configuration read at start decides their number."""
        workers = filter_workers_for(config.parallelism)
        if not workers:
            return None
        log.info("filter workers allowed", extra={"workers": workers})
        forced = self.filter_fanout_min_seconds == 0  # every pass split, small ones too
        return FilterPool(
            workers,
            feature_gates=self.feature_gates,
            min_seconds=self.filter_fanout_min_seconds,
            min_rows=0 if forced else MIN_SPLIT_ROWS,
        )

    async def _lead_then_schedule(self, client: KubeClient, config: ResolvedConfig) -> None:
        """Schedule only while holding the lease; losing it ends the process, as upstream.

        As kube-scheduler's Run (cmd/kube-scheduler/app/server.go): informers start and sync
        first and the Lease is campaigned for after, unless delayCacheUntilActive, in which case
        they start only once the Lease is won.
        """
        scheduler = self.scheduler
        assert scheduler is not None
        if config.delay_cache_until_active:
            log.info("delayCacheUntilActive: informers start once the lease is won")
            await self._campaign(client, config, scheduler.run)
        else:
            active = asyncio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(scheduler.run, active, name="scheduler")
                await scheduler.wait_for_cache_sync()
                await self._campaign(client, config, active.set)
                group.cancel_scope.cancel()  # the warm scheduler ends with the campaign
        raise LeadershipLost("leader election lost; exiting so a fresh process can campaign")

    async def _campaign(
        self,
        client: KubeClient,
        config: ResolvedConfig,
        on_started_leading: Callable[[], Any],
    ) -> None:
        def started_leading() -> Any:
            self.metrics.leading(ELECTOR_NAME, True)
            return on_started_leading()

        self.metrics.leading(ELECTOR_NAME, False)  # a standby, as client-go's new elector says
        self.elector = LeaderElector.from_config(
            client,
            config.leader_election,
            on_started_leading=started_leading,
            on_stopped_leading=self._stopped_leading,
            on_new_leader=lambda leader: log.info("new leader elected", extra={"leader": leader}),
        )
        log.info("waiting to acquire the lease", extra={"lease": self.elector.describe()})
        await self.elector.run()

    def _stopped_leading(self) -> None:
        """A stop that was asked for is routine; only a lost lease deserves a warning (as
        kube-scheduler's OnStoppedLeading: "Requested to terminate, exiting" at info, else
        "Leaderelection lost")."""
        self.metrics.leading(ELECTOR_NAME, False)
        if self.elector is not None and self.elector.lost:
            log.warning("stopped leading: the lease was lost", extra=self._lease_keys())
        else:
            log.info("stopped leading: shutting down", extra=self._lease_keys())

    def _lease_keys(self) -> dict[str, str]:
        return {} if self.elector is None else {"lease": self.elector.describe()}

    def _gate(self, name: str) -> bool:
        return self.feature_gates.get(name, zpages.ZPAGES_GATE_DEFAULTS.get(name, False))

    def zpage_routes(self, config: ResolvedConfig) -> list[tuple[str, str, zpages.Handler]]:
        """kube-scheduler's newEndpointsHandler: /configz always, /debug/flags/v with
        enableProfiling, /flagz and /statusz behind their feature gates."""
        routes: list[tuple[str, str, zpages.Handler]] = [
            ("GET", zpages.CONFIGZ_PATH, self.configz.handle)
        ]
        if config.enable_profiling:
            routes += [
                ("*", path, handler)
                for path, handler in zpages.verbosity_routes(self.set_verbosity).items()
            ]
        flagz = self._gate("ComponentFlagz")
        if flagz:
            routes.append(("GET", zpages.FLAGZ_PATH, zpages.Flagz(self.flags).handle))
        if self._gate("ComponentStatusz"):
            statusz = zpages.Statusz(zpages.listed_paths(flagz=flagz))
            routes.append(("GET", zpages.STATUSZ_PATH, statusz.handle))
        return routes

    def served_paths(self) -> tuple[str, ...]:
        """The endpoints the start-up line names."""
        paths = ["/metrics", "/healthz", "/livez", "/readyz", "/configz"]
        if self._gate("ComponentStatusz"):
            paths.append("/statusz")
        if self._gate("ComponentFlagz"):
            paths.append("/flagz")
        return (*paths, "/debug")

    def _leading(self) -> tuple[bool, str]:
        if self.elector is None:
            return True, "leader election disabled"
        return self.elector.readiness()

    @staticmethod
    async def _freeze_after_sync(scheduler: Scheduler) -> None:
        await scheduler.wait_for_cache_sync()
        gc_tuning.freeze_long_lived()

    async def _update_gauges(self, scheduler: Scheduler) -> None:
        while True:
            cache = scheduler.cache
            self.metrics.set_cache_size(
                cache.node_count(), cache.pod_count(), cache.assumed_pod_count()
            )
            await asyncio.sleep(GAUGE_PERIOD_SECONDS)


def _in_effect(running: ResolvedConfig, reloaded: ResolvedConfig) -> ResolvedConfig:
    """The reloaded configuration with the fields only a restart applies at their running
    values (profiles/fields.py), which is what the process now runs with."""
    return dataclasses.replace(
        reloaded,
        leader_election=running.leader_election,
        client_connection=running.client_connection,
        delay_cache_until_active=running.delay_cache_until_active,
        enable_profiling=running.enable_profiling,
        enable_contention_profiling=running.enable_contention_profiling,
    )


def _set_root_verbosity(level: int) -> None:
    """klog's -v at run time: the root logger's level, as setup_logging set it at start."""
    logging.getLogger().setLevel(V(level))
