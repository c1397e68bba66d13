package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import io.vivarium.testkit.XfsLoopMount;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts the daemons of an end-to-end test class and {@linkplain Daemon#cleanUp() cleans up} after
 * each of them, however the test ended: a daemon started in a test after that test, one started in
 * {@code @BeforeAll} after the class. Sandboxes outlive their daemon by design, so without this a
 * failed assertion would leave them running. Register it in a static field:
 *
 * <pre>{@code @RegisterExtension static final Daemons daemons = new Daemons();}</pre>
 *
 * Latest first, so that a daemon that re-adopted the sandboxes of an earlier one on the same state
 * directory deletes them through its API before the earlier one's leftovers are looked for.
 *
 * <p>A test that needs reflink under the state directory (issue 10: storage-reflink really
 * exercised) opts in with {@link #xfsStateDir}: a loop-mounted XFS, unmounted and removed after the
 * daemons of the same scope are cleaned up; the test is skipped with the reason on a host that
 * cannot mount one.
 */
final class Daemons implements BeforeEachCallback, AfterEachCallback, AfterAllCallback {
    private final List<Daemon> classDaemons = new ArrayList<>();
    private final List<Daemon> testDaemons = new ArrayList<>();
    private final List<XfsLoopMount> classMounts = new ArrayList<>();
    private final List<XfsLoopMount> testMounts = new ArrayList<>();
    private boolean inTest;

    /** Starts a daemon on {@code stateDir} with extra launcher arguments. */
    Daemon start(Path stateDir, List<String> args) throws Exception {
        return start(stateDir, args, List.of());
    }

    /** Starts a daemon on {@code stateDir} with extra launcher arguments and JVM options (e.g. {@code -Dkey=value}). */
    synchronized Daemon start(Path stateDir, List<String> args, List<String> jvmOptions) throws Exception {
        Daemon daemon = new Daemon(stateDir, args, jvmOptions);
        (inTest ? testDaemons : classDaemons).add(daemon);
        return daemon.start();
    }

    /** Keeps a daemon started by a test until the class is done: a shared daemon a test restarted. */
    synchronized Daemon keepForClass(Daemon daemon) {
        if (testDaemons.remove(daemon)) {
            classDaemons.add(daemon);
        }
        return daemon;
    }

    /** Starts a fleet node inside {@code namespace} (see {@link Daemon#node}). */
    synchronized Daemon startNode(Path stateDir, NetNamespace namespace, String nodeId, List<String> args) throws Exception {
        return startNode(stateDir, namespace, nodeId, args, List.of());
    }

    /** A node with JVM options too (e.g. a test point it halts at). */
    synchronized Daemon startNode(Path stateDir, NetNamespace namespace, String nodeId, List<String> args, List<String> jvmOptions)
            throws Exception {
        Daemon daemon = Daemon.node(stateDir, namespace, nodeId, args, jvmOptions);
        (inTest ? testDaemons : classDaemons).add(daemon);
        return daemon.start();
    }

    Daemon start(Path stateDir) throws Exception {
        return start(stateDir, List.of());
    }

    /**
     * A state directory (not yet created) on a fresh loop-mounted XFS with reflink below
     * {@code workDir}, kept until the daemons of this test (or, from {@code @BeforeAll}, this
     * class) are cleaned up.
     */
    synchronized Path xfsStateDir(Path workDir) throws IOException {
        return xfsStateDir(workDir, XfsLoopMount.DEFAULT_BYTES);
    }

    /** As {@link #xfsStateDir(Path)}, on a filesystem of {@code bytes} (sparse: only what is written takes space). */
    synchronized Path xfsStateDir(Path workDir, long bytes) throws IOException {
        XfsLoopMount mount = XfsLoopMount.create(workDir, bytes);
        (inTest ? testMounts : classMounts).add(mount);
        return mount.dir().resolve("state");
    }

    @Override
    public synchronized void beforeEach(ExtensionContext context) {
        inTest = true;
    }

    @Override
    public synchronized void afterEach(ExtensionContext context) throws Exception {
        inTest = false;
        cleanUp(testDaemons, testMounts);
    }

    @Override
    public synchronized void afterAll(ExtensionContext context) throws Exception {
        cleanUp(classDaemons, classMounts);
    }

    /** The daemons first (their sandboxes hold files on the mounts), then the mounts. */
    private static void cleanUp(List<Daemon> daemons, List<XfsLoopMount> mounts) throws Exception {
        List<AutoCloseable> all = new ArrayList<>();
        daemons.reversed().forEach(d -> all.add(d::cleanUp));
        all.addAll(mounts);
        daemons.clear();
        mounts.clear();
        Exception first = null;
        for (AutoCloseable c : all) {
            try {
                c.close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
