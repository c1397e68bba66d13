package io.vivarium.core.internal;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.BaselineRequest;
import io.vivarium.api.BaselineResult;
import io.vivarium.api.Caller;
import io.vivarium.api.ChangeSet;
import io.vivarium.api.ChangesRequest;
import io.vivarium.api.DryRunRequest;
import io.vivarium.api.DryRunResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.ScratchRun;
import io.vivarium.api.spi.ScratchRuns;

/** Baselines, change sets and dry-runs of a sandbox's files, over the {@link ChangeTracker}. */
final class ChangeSets {
    private final BackendRegistry registry;
    private final Sandboxes sandboxes;
    private final LiveInstances live;
    private final FingerprintModes fingerprints;
    private final ChangeTracker tracker;
    private final CheckpointDryRun checkpointDryRun;

    ChangeSets(BackendRegistry registry, Sandboxes sandboxes, LiveInstances live, FingerprintModes fingerprints,
            ChangeTracker tracker, CheckpointDryRun checkpointDryRun) {
        this.registry = registry;
        this.sandboxes = sandboxes;
        this.live = live;
        this.fingerprints = fingerprints;
        this.tracker = tracker;
        this.checkpointDryRun = checkpointDryRun;
    }

    BaselineResult baseline(Caller caller, String id, BaselineRequest request) {
        Sandbox sb = sandboxes.find(caller, id);
        return sb.gate.shared(live.patience(),
                () -> tracker.baseline(sandboxes.dirs().dirOf(id), live.of(sb), request.paths()));
    }

    ChangeSet changes(Caller caller, String id, ChangesRequest request) {
        Sandbox sb = sandboxes.find(caller, id);
        return sb.gate.shared(live.patience(), () -> tracker.changes(sandboxes.dirs().dirOf(id), live.of(sb),
                request == null ? null : request.paths()));
    }

    DryRunResult dryRun(Caller caller, String id, DryRunRequest request) {
        if (request.command() == null || request.command().isBlank()) {
            throw ApiException.badRequest("command is required: a shell command line, e.g. \"rm -rf build\"");
        }
        List<String> paths = SandboxPaths.check(request.paths());
        Sandbox sb = sandboxes.find(caller, id);
        sb.refuseWritableVolume("dry-run");
        return sb.gate.exclusive("dry-run", live.patience(), () -> dryRun(sb, paths, request));
    }

    /**
     * A sandbox whose backend has checkpoints and no scratch runs for it (its workspace is not on
     * the host: a VM; or the backend has none: a gVisor container) is reverted through its
     * checkpoints; any other sandbox through its backend's scratch runs (procbox's overlay), if
     * it has them.
     */
    private DryRunResult dryRun(Sandbox sb, List<String> paths, DryRunRequest request) {
        SandboxInstance instance = live.of(sb);
        ExecRequest exec = ExecRequests.complete(new ExecRequest(List.of("sh", "-c", request.command()),
                request.timeoutSecs(), null, null, null, null), instance.workspace(), sb.record().root());
        BackendRegistry.Entry backend = registry.of(sb);
        Optional<ScratchRuns> scratchRuns = backend.seam(ScratchRuns.class)
                .filter(s -> instance.hostFiles().isPresent());
        Optional<Checkpoints> checkpoints = backend.seam(Checkpoints.class);
        if (scratchRuns.isEmpty() && checkpoints.isPresent()) {
            return checkpointDryRun.run(sb, instance, checkpoints.get(), exec, paths, fingerprints.best());
        }
        ScratchRuns scratch = scratchRuns.orElseThrow(() -> ApiException.notImplemented("backend "
                + sb.record().backend() + " cannot dry-run commands"));
        FingerprintMode mode = fingerprints.best();
        int filesBefore = tracker.countBeforeDryRun(instance, paths);
        long startedAt = Instant.now().getEpochSecond();
        ScratchRun run = scratch.run(instance, exec);
        ChangeSet changes;
        try {
            changes = tracker.compare(run, paths, mode, filesBefore, startedAt);
        } catch (RuntimeException e) {
            discardAfterFailure(run, e);
            throw e;
        }
        run.close();
        ExecResult r = run.result();
        return new DryRunResult(r.stdout(), r.stderr(), r.exitCode(), r.timedOut(), r.truncated(), r.durationMs(),
                changes, true, run.mechanism());
    }

    private static void discardAfterFailure(ScratchRun run, RuntimeException cause) {
        try {
            run.close();
        } catch (RuntimeException closeFailure) {
            throw ApiException.internal(cause.getMessage() + "; and discarding the dry-run's effects failed too, so "
                    + "they may remain: " + closeFailure.getMessage(), closeFailure);
        }
    }
}
