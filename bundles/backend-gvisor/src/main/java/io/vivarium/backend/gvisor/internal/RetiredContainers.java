package io.vivarium.backend.gvisor.internal;

import io.vivarium.common.files.AtomicFiles;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The containers restores replaced, deleted after the restore answered: {@code runsc delete} of
 * a killed container waits for its sandbox process to go (1.5 s measured under ptrace, against
 * 130 ms for the restore itself), which no caller should wait for. Each is marked by a file named
 * by its id in {@link ContainerFiles#retired()} before the restore starts, so a daemon killed
 * before the deletion leaves a mark that the next adopt or destroy acts on ({@link #removeAll});
 * a mark never removes the container a sandbox runs in now. The deletions of one sandbox run one
 * after another on a virtual thread.
 */
final class RetiredContainers implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RetiredContainers.class.getName());
    /** How long an adopt, a destroy or a shutdown waits for the deletions already running. */
    private static final Duration PATIENCE = Duration.ofSeconds(60);

    private final GvisorLauncher launcher;
    private final ConcurrentMap<Path, CompletableFuture<Void>> running = new ConcurrentHashMap<>();
    private final ExecutorService deleter = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("vivarium-gvisor-retired-", 0).factory());

    RetiredContainers(GvisorLauncher launcher) {
        this.launcher = launcher;
    }

    /** Marks {@code containerId} as one to delete once it is no longer the sandbox's. */
    void mark(ContainerFiles files, String containerId) throws IOException {
        Files.createDirectories(files.retired());
        AtomicFiles.write(files.retired().resolve(containerId), new byte[0]);
    }

    /** Deletes the marked {@code containerId}, which the sandbox no longer runs in, in the background. */
    void deleteLater(ContainerFiles files, String containerId) {
        Path key = files.retired();
        CompletableFuture<Void> next = running.compute(key, (k, before) ->
                (before == null ? CompletableFuture.<Void>completedFuture(null) : before)
                        .thenRunAsync(() -> delete(files, containerId), deleter));
        next.whenComplete((ignored, error) -> running.remove(key, next));
    }

    private void delete(ContainerFiles files, String containerId) {
        RuntimeException failures = new RuntimeException();
        remove(files, containerId, failures);
        for (Throwable t : failures.getSuppressed()) {
            LOG.log(System.Logger.Level.WARNING, "the container " + containerId + " a restore replaced is not deleted "
                    + "yet (the next adopt or destroy of its sandbox tries again): " + t.getMessage());
        }
    }

    /**
     * Deletes every marked container but {@code current} (before an adopt or a destroy), once the
     * deletions running for this sandbox ended. What fails is added to {@code failures}.
     */
    void removeAll(ContainerFiles files, String current, Exception failures) {
        CompletableFuture<Void> inFlight = running.get(files.retired());
        if (inFlight != null) {
            try {
                inFlight.get(PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException | TimeoutException e) {
                failures.addSuppressed(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                failures.addSuppressed(e);
                return;
            }
        }
        try (DirectoryStream<Path> marks = Files.newDirectoryStream(files.retired())) {
            for (Path mark : marks) {
                String containerId = mark.getFileName().toString();
                if (containerId.equals(current)) {
                    // a restore that failed: the mark outlived its container's replacement
                    Files.deleteIfExists(mark);
                } else {
                    remove(files, containerId, failures);
                }
            }
        } catch (NoSuchFileException e) {
            // nothing was ever retired
        } catch (IOException e) {
            failures.addSuppressed(e);
        }
    }

    /** Deletes one marked container, then its mark; the mark stays if any part fails. */
    private void remove(ContainerFiles files, String containerId, Exception failures) {
        int failed = failures.getSuppressed().length;
        launcher.remove(files, containerId, failures);
        if (failures.getSuppressed().length == failed) {
            try {
                Files.deleteIfExists(files.retired().resolve(containerId));
            } catch (IOException e) {
                failures.addSuppressed(e);
            }
        }
    }

    /** Waits for the deletions already running (the next revision's adopt would otherwise meet them). */
    @Override
    public void close() {
        deleter.shutdown();
        try {
            if (!deleter.awaitTermination(PATIENCE.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.log(System.Logger.Level.WARNING, "deletions of replaced containers still run; the next adopt "
                        + "of their sandboxes finishes them");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
