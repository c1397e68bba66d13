package io.vivarium.itests.e2e;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

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
 */
final class Daemons implements BeforeEachCallback, AfterEachCallback, AfterAllCallback {
    private final List<Daemon> classDaemons = new ArrayList<>();
    private final List<Daemon> testDaemons = new ArrayList<>();
    private boolean inTest;

    /** Starts a daemon on {@code stateDir} with extra launcher arguments. */
    synchronized Daemon start(Path stateDir, List<String> args) throws Exception {
        Daemon daemon = new Daemon(stateDir, args);
        (inTest ? testDaemons : classDaemons).add(daemon);
        return daemon.start();
    }

    Daemon start(Path stateDir) throws Exception {
        return start(stateDir, List.of());
    }

    @Override
    public synchronized void beforeEach(ExtensionContext context) {
        inTest = true;
    }

    @Override
    public synchronized void afterEach(ExtensionContext context) throws Exception {
        inTest = false;
        cleanUp(testDaemons);
    }

    @Override
    public synchronized void afterAll(ExtensionContext context) throws Exception {
        cleanUp(classDaemons);
    }

    private static void cleanUp(List<Daemon> daemons) throws Exception {
        Exception first = null;
        for (Daemon d : daemons.reversed()) {
            try {
                d.cleanUp();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        daemons.clear();
        if (first != null) {
            throw first;
        }
    }
}
