package io.vivarium.core.internal;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;

import io.vivarium.api.ApiException;
import io.vivarium.api.BaselineResult;
import io.vivarium.api.ChangeSet;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.ScratchRun;

/**
 * Baselines and change sets of a sandbox's files. Files are listed on the host when the backend
 * says where they are ({@link SandboxInstance#hostFiles()}), otherwise by the fingerprint mode's
 * listing command run through the guest channel.
 */
final class ChangeTracker {
    private final FingerprintModes modes;
    private final HostLister host;
    private final BaselineStore baselines = new BaselineStore();

    ChangeTracker(FingerprintModes modes, HostLister host) {
        this.modes = modes;
        this.host = host;
    }

    BaselineResult baseline(Path sandboxDir, SandboxInstance instance, List<String> requested) {
        List<String> paths = SandboxPaths.check(requested);
        FingerprintMode mode = modes.best();
        FileListing previous = reusable(sandboxDir, instance.id());
        FileListing listing = list(instance, paths, mode, previous);
        baselines.save(sandboxDir, listing);
        return new BaselineResult(true, listing.files().size(), mode.name(), paths);
    }

    ChangeSet changes(Path sandboxDir, SandboxInstance instance, List<String> requested) {
        FileListing base = baselines.load(sandboxDir, instance.id());
        List<String> scope = requested == null ? base.paths() : SandboxPaths.check(requested);
        for (String p : scope) {
            if (base.paths().stream().noneMatch(b -> SandboxPaths.within(p, b))) {
                throw ApiException.badRequest("path " + p + " is not covered by the baseline (its paths: "
                        + String.join(", ", base.paths()) + ")");
            }
        }
        FingerprintMode mode = modes.best();
        if (!mode.name().equals(base.mode())) {
            throw ApiException.conflict("the baseline was taken in " + base.mode() + " mode but the files would now be "
                    + "listed in " + mode.name() + " mode (installed: " + String.join(", ", modes.names())
                    + "); take a new baseline");
        }
        FileListing now = list(instance, scope, mode, base);
        return compare(base.within(scope).files(), now.files(), mode.name(), scope, base.takenAtUnix());
    }

    /** Checks the directories exist in the sandbox and counts their files, before a dry-run changes anything. */
    int countBeforeDryRun(SandboxInstance instance, List<String> paths) {
        HostFiles view = instance.hostFiles().orElseThrow(() -> ApiException.notImplemented(
                "dry-run needs a backend whose workspace is on the host"));
        return host.count(view, paths, ListingLimits.standard());
    }

    /** What a dry-run changed: only the paths the mechanism says were touched, when it knows them. */
    ChangeSet compare(ScratchRun run, List<String> paths, FingerprintMode mode, int filesBefore, long startedAt) {
        ListingLimits limits = ListingLimits.standard();
        Optional<Set<String>> touched = run.touched();
        if (touched.isEmpty()) {
            FileListing before = host.list(run.before(), paths, mode, null, limits);
            FileListing after = host.list(run.after(), paths, mode, null, limits);
            return compare(before.files(), after.files(), mode.name(), paths, startedAt);
        }
        SortedMap<String, String> before = new TreeMap<>();
        SortedMap<String, String> after = new TreeMap<>();
        for (String probe : probes(touched.get(), paths)) {
            host.regularFilesAt(run.before(), probe, mode, before, limits);
            host.regularFilesAt(run.after(), probe, mode, after, limits);
        }
        ChangeSet partial = compare(before, after, mode.name(), paths, startedAt);
        int unchanged = filesBefore - partial.modified().size() - partial.deleted().size();
        return new ChangeSet(partial.added(), partial.modified(), partial.deleted(), unchanged, mode.name(), paths,
                startedAt);
    }

    /** The touched paths that matter for {@code paths}, narrowed to them, without overlaps. */
    static List<String> probes(Set<String> touched, List<String> paths) {
        TreeSet<String> probes = new TreeSet<>();
        for (String t : touched) {
            for (String p : paths) {
                if (SandboxPaths.within(t, p)) {
                    probes.add(t);
                } else if (SandboxPaths.within(p, t)) {
                    probes.add(p);
                }
            }
        }
        List<String> out = new ArrayList<>();
        for (String p : probes) {
            if (out.isEmpty() || !SandboxPaths.within(p, out.get(out.size() - 1))) {
                out.add(p);
            }
        }
        return out;
    }

    static ChangeSet compare(SortedMap<String, String> before, SortedMap<String, String> after, String mode,
            List<String> paths, long takenAtUnix) {
        List<String> added = new ArrayList<>();
        List<String> modified = new ArrayList<>();
        List<String> deleted = new ArrayList<>();
        int unchanged = 0;
        for (Map.Entry<String, String> e : after.entrySet()) {
            String old = before.get(e.getKey());
            if (old == null) {
                added.add(e.getKey());
            } else if (old.equals(e.getValue())) {
                unchanged++;
            } else {
                modified.add(e.getKey());
            }
        }
        for (String path : before.keySet()) {
            if (!after.containsKey(path)) {
                deleted.add(path);
            }
        }
        return new ChangeSet(added, modified, deleted, unchanged, mode, paths, takenAtUnix);
    }

    /**
     * The files of a sandbox that a checkpoint reverts: on the host where its workspace there holds
     * every path, as a baseline reads them, else through its guest channel. The host walk starts no
     * process in the guest (the agent's walk, a new process in a gVisor container that was just
     * checkpointed, took over a second here).
     */
    FileListing listForDryRun(SandboxInstance instance, List<String> paths, FingerprintMode mode) {
        ListingLimits limits = ListingLimits.standard();
        Optional<HostFiles> view = instance.hostFiles()
                .filter(v -> paths.stream().allMatch(p -> SandboxPaths.within(p, v.sandboxDir())));
        if (view.isPresent()) {
            return host.list(view.get(), paths, mode, null, limits);
        }
        return GuestLister.list(instance.channel(), paths, mode, limits);
    }

    private FileListing list(SandboxInstance instance, List<String> paths, FingerprintMode mode, FileListing reuse) {
        ListingLimits limits = ListingLimits.standard();
        Optional<HostFiles> view = instance.hostFiles();
        if (view.isPresent()) {
            return host.list(view.get(), paths, mode, reuse, limits);
        }
        return GuestLister.list(instance.channel(), paths, mode, limits);
    }

    /** The current baseline, if any and readable, whose unchanged files need not be read again. */
    private FileListing reusable(Path sandboxDir, String id) {
        try {
            return baselines.load(sandboxDir, id);
        } catch (ApiException e) {
            return null;
        }
    }
}
