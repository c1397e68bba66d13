package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ApiException;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A dry-run's private directory {@code dryrun-*} in the sandbox's directory, on the workspace's
 * filesystem: the overlay's {@code upper}, {@code wd} (its work dir) and {@code merged} mount
 * point, or a {@code copy} of the workspace, the {@code lower} mount point of a workspace mounted
 * in the sandbox's namespace only, and the launch files of the command's twin sandbox. A snapshot
 * of such a workspace freezes it through a scratch directory of the same kind, so that what a crash
 * leaves of either is discarded the same way.
 */
final class DryRunScratch {

    private static final String PREFIX = "dryrun-";
    private static final Duration KILL_WAIT = Duration.ofSeconds(5);

    private final Path dir;

    private DryRunScratch(Path dir) {
        this.dir = dir;
    }

    static DryRunScratch create(Path sandboxDir) throws IOException {
        return new DryRunScratch(Files.createTempDirectory(sandboxDir, PREFIX,
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"))));
    }

    /** What dry-runs interrupted by a crash of the daemon left in {@code sandboxDir}. */
    private static List<DryRunScratch> leftovers(Path sandboxDir) throws IOException {
        List<DryRunScratch> found = new ArrayList<>();
        if (!Files.isDirectory(sandboxDir)) {
            return found;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(sandboxDir, PREFIX + "*")) {
            for (Path entry : entries) {
                if (Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS)) {
                    found.add(new DryRunScratch(entry));
                }
            }
        }
        return found;
    }

    /**
     * Ends, unmounts and removes what dry-runs interrupted by a crash of the daemon left in
     * {@code home}, the directory of sandbox {@code sandboxId}'s files.
     */
    static void discardLeftovers(String sandboxId, Path home, HostTools tools) {
        try {
            for (DryRunScratch leftover : leftovers(home)) {
                leftover.discard(tools);
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot discard what an interrupted dry-run left in sandbox " + sandboxId
                    + ": " + e.getMessage(), e);
        }
    }

    Path upper() {
        return dir.resolve("upper");
    }

    Path overlayWorkDir() {
        return dir.resolve("wd");
    }

    Path merged() {
        return dir.resolve("merged");
    }

    Path lower() {
        return dir.resolve("lower");
    }

    Path copy() {
        return dir.resolve("copy");
    }

    LaunchFiles twinFiles() {
        return LaunchFiles.in(dir);
    }

    /**
     * Kills what is left of the twin and waits until it is gone. Killing the init of its PID
     * namespace ends every process in it; killing its outer bwrap does too ({@code --die-with-parent}).
     * Only processes whose command line names this directory are touched, so recycled pids are safe.
     */
    void killTwin() throws IOException {
        LaunchFiles files = twinFiles();
        for (Optional<Long> pid : List.of(files.childPid(), files.bwrapPid())) {
            Optional<InitProcess> process = pid.flatMap(InitProcess::find).filter(this::isOurs);
            if (process.isPresent()) {
                process.get().kill(KILL_WAIT);
                if (process.get().isRunning()) {
                    throw new IOException("process " + process.get().pid() + " of the dry-run did not exit within "
                            + KILL_WAIT.toSeconds() + " s of SIGKILL");
                }
            }
        }
    }

    private boolean isOurs(InitProcess process) {
        String inside = dir + "/";
        return ProcFs.commandLine(process.pid()).stream().anyMatch(arg -> arg.startsWith(inside));
    }

    /** Ends the twin, unmounts the overlay, then its lower layer if mounted here, and removes the directory; safe to repeat. */
    void discard(HostTools tools) throws IOException {
        killTwin();
        for (Path mounted : List.of(merged(), lower())) {
            if (ProcFs.isMountPoint(mounted)) {
                OverlayMount.unmount(mounted);
            }
        }
        if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            tools.removeTree(dir);
        }
    }
}
