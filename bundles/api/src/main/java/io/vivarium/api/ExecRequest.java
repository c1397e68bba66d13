package io.vivarium.api;

import java.util.List;
import java.util.Map;

/**
 * A command to run inside a sandbox (body of {@code POST /v1/sandboxes/{id}/exec}). Core fills in
 * defaults and validates limits before a backend sees it, so backends may rely on every field
 * being set.
 *
 * @param args argv; never interpreted by a shell
 * @param timeoutSecs wall-clock limit; on expiry the command's whole process group is killed
 * @param env variables set for the command, over the sandbox defaults ({@code PATH}, {@code HOME},
 *        {@code LANG})
 * @param cwd working directory inside the sandbox
 * @param stdin bytes fed to standard input (UTF-8), or null for an empty stdin
 * @param maxOutputBytes cap on captured bytes per stream; the rest is discarded and reported
 */
public record ExecRequest(List<String> args, Integer timeoutSecs, Map<String, String> env, String cwd,
        String stdin, Integer maxOutputBytes) {
}
