package io.vivarium.backend.procbox.internal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import io.vivarium.api.ExecResult;

/** {@code bwrap --version} ("bubblewrap 0.8.0"), asked once it can be answered and remembered. */
final class BwrapVersion implements Supplier<String> {

    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    private final Path bwrap;
    private volatile String known;

    BwrapVersion(Path bwrap) {
        this.bwrap = bwrap;
    }

    @Override
    public String get() {
        String v = known;
        if (v != null) {
            return v;
        }
        if (!Files.isExecutable(bwrap)) {
            return "bubblewrap (not installed)";
        }
        ExecResult r = ProcessRunner.run(List.of(SandboxCommands.SETSID, bwrap.toString(), "--version"),
                Map.of("LC_ALL", "C"), null, TIMEOUT, 256);
        String line = r.stdout().strip();
        if (r.exitCode() != 0 || line.isEmpty()) {
            return "bubblewrap (version unknown: " + r.stderr().strip() + ")";
        }
        known = line;
        return line;
    }
}
