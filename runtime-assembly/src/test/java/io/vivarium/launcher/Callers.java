package io.vivarium.launcher;

import java.nio.file.Path;
import java.util.Map;

/** Callers for tests: this JVM's working directory, no terminal. */
final class Callers {
    private Callers() {
    }

    static Caller withEnv(Map<String, String> env) {
        return new Caller(env, Path.of("").toAbsolutePath(), false, null, true);
    }
}
