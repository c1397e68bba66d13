package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A workspace whose owner keeps swapping a directory for a symlink to a host directory while the
 * daemon walks it through a nosymfollow bind mount (procbox's walk view): every walk either fails
 * with ELOOP (or a vanished entry) or lists only workspace files, never the host directory's.
 */
class SymlinkSwapWalkTest {
    private static final int DIRS = 20;
    private static final int FILES_PER_DIR = 1000;
    private static final String ELOOP = "Too many levels of symbolic links";

    @TempDir
    Path tmp;

    private Path workspace;
    private Path view;
    private Path host;
    private ForkJoinPool pool;

    @BeforeEach
    void mountANosymfollowView() throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "mounting the walk view needs root");
        workspace = Files.createDirectory(tmp.resolve("workspace"));
        view = Files.createDirectory(tmp.resolve("view"));
        Assumptions.assumeTrue(run("mount", "--bind", workspace.toString(), view.toString()) == 0,
                "cannot bind-mount here");
        Assumptions.assumeTrue(run("mount", "-o", "remount,bind,nosymfollow", view.toString()) == 0,
                "this kernel has no nosymfollow mount option (Linux 5.10+)");
        pool = new ForkJoinPool(2);
    }

    @AfterEach
    void unmount() throws Exception {
        if (pool != null) {
            // a failed walk returns while sibling tasks may still read below the view
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS), "the walk's tasks did not stop");
        }
        if (view != null && Files.readString(Path.of("/proc/self/mountinfo")).contains(" " + view + " ")) {
            assertEquals(0, run("umount", view.toString()));
        }
    }

    @Test
    void aWalkRacingASymlinkSwapFailsWithEloopOrListsNoHostFile() throws Exception {
        String marker = "host marker " + UUID.randomUUID();
        host = Files.createDirectory(tmp.resolve("host"));
        Path swapped = Files.createDirectory(workspace.resolve("swap"));
        for (int i = 0; i < 100; i++) {
            Files.writeString(host.resolve("f" + i), marker);
            Files.writeString(swapped.resolve("f" + i), "workspace file " + i);
        }
        for (int d = 0; d < DIRS; d++) {
            Path dir = Files.createDirectory(workspace.resolve("d" + d));
            for (int f = 0; f < FILES_PER_DIR; f++) {
                Files.writeString(dir.resolve("f" + f), "");
            }
        }
        HostFiles hostView = new HostFiles(host, "/host", 0, 0);
        String markerFingerprint = new HostLister(pool).list(hostView, List.of("/host"), TestModes.content(), null,
                ListingLimits.standard()).files().get("/host/f0");

        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger swaps = new AtomicInteger();
        CompletableFuture<Void> swapper = CompletableFuture.runAsync(() -> swapUntil(stop, swaps));
        int eloops = 0;
        int walks = 0;
        List<String> otherFailures = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        try {
            while ((eloops == 0 || walks < 10) && System.nanoTime() < deadline && !swapper.isDone()) {
                walks++;
                try {
                    FileListing listing = new HostLister(pool).list(new HostFiles(view, "/work", 0, 0), List.of("/work"),
                            TestModes.content(), null, ListingLimits.standard());
                    assertFalse(listing.files().containsValue(markerFingerprint), "the walk read the host's files");
                    assertTrue(listing.files().keySet().stream().allMatch(p -> p.startsWith("/work/")),
                            listing.files().keySet().toString());
                } catch (ApiException e) {
                    assertEquals(400, e.status(), e.getMessage());
                    assertFalse(e.getMessage().contains(tmp.toString()), "a host path in the answer: " + e.getMessage());
                    if (e.getMessage().contains(ELOOP)) {
                        eloops++;
                    } else if (!e.getMessage().contains("disappeared while listing")) {
                        otherFailures.add(e.getMessage());
                    }
                }
            }
        } finally {
            stop.set(true);
        }
        swapper.get(30, TimeUnit.SECONDS);
        assertEquals(List.of(), otherFailures, "only ELOOP (or an entry vanishing mid-swap) may fail a walk");
        assertTrue(eloops > 0, "no walk met the symlink in " + walks + " walks and " + swaps + " swaps");
    }

    /** What a sandbox's process would do: swap {@code swap/} for a symlink to the host directory and back. */
    private void swapUntil(AtomicBoolean stop, AtomicInteger swaps) {
        Path swap = workspace.resolve("swap");
        Path aside = workspace.resolve("swap.aside");
        try {
            while (!stop.get()) {
                Files.move(swap, aside);
                Files.createSymbolicLink(swap, host);
                Files.delete(swap);
                Files.move(aside, swap);
                swaps.incrementAndGet();
            }
        } catch (IOException e) {
            fail("the swapper failed", e);
        }
    }

    private static int run(String... argv) throws IOException, InterruptedException {
        return Bounded.waitFor(new ProcessBuilder(argv).inheritIO().start(), Duration.ofSeconds(30), String.join(" ", argv));
    }
}
