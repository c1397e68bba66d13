package io.vivarium.itests.e2e;

import java.nio.file.Files;
import java.nio.file.Path;

/** What the host offers; tests that need something missing are skipped with the reason. */
final class Host {
    private Host() {
    }

    static boolean canRunProcbox() {
        return Files.isExecutable(Path.of("/usr/bin/bwrap")) && isRoot();
    }

    static final String PROCBOX_REASON = "needs bubblewrap (apt-get install bubblewrap) and a root daemon";

    static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }
}
