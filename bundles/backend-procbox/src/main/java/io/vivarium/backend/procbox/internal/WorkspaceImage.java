package io.vivarium.backend.procbox.internal;

import java.nio.file.Path;

/**
 * A sandbox's own workspace filesystem: {@code file}, a sparse copy of {@code template}, which
 * the launch loop-mounts at the workspace directory.
 */
record WorkspaceImage(Path template, Path file) {
}
