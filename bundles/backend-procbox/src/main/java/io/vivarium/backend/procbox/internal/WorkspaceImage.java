package io.vivarium.backend.procbox.internal;

import java.nio.file.Path;

/**
 * A sandbox's own workspace filesystem: {@code file}, a sparse copy of {@code template}, which
 * the launch loop-mounts at the workspace directory. A null {@code template} means {@code file}
 * is a copy made already ({@link WorkspacePool}), which the launch only mounts.
 */
record WorkspaceImage(Path template, Path file) {
}
