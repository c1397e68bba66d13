package io.vivarium.api;

import java.util.List;

/**
 * Body of {@code POST /v1/sandboxes/{id}/dry-run}.
 *
 * @param command a shell command line, run with {@code sh -c}
 * @param paths directories whose changes are reported
 * @param timeoutSecs limit for the command (default 30)
 */
public record DryRunRequest(String command, List<String> paths, Integer timeoutSecs) {
}
