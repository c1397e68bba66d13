package io.vivarium.api.spi;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A root file system unpacked from an OCI image ({@link RootImages}), for an instance to start on
 * (a template's, docs/templates.md): read-only and shared by every instance of the image, each
 * writing only its own workspace. Since 2.12.
 *
 * @param digest the image's manifest digest ({@code sha256:...})
 * @param rootfs the unpacked root, owned by root, never written after it was unpacked
 * @param env the image's {@code Env}
 * @param workdir the image's {@code WorkingDir}, {@code /} when it has none
 * @param user the image's {@code User} as written, or null
 * @param uid the uid its {@code User} resolves to in its own {@code /etc/passwd} (0 when it has none)
 * @param gid the gid its {@code User} resolves to in its own {@code /etc/passwd} and {@code /etc/group}
 * @param entrypoint the image's {@code Entrypoint}
 * @param cmd the image's {@code Cmd}
 */
public record RootImage(String digest, Path rootfs, Map<String, String> env, String workdir, String user, int uid,
        int gid, List<String> entrypoint, List<String> cmd) {

    public RootImage {
        env = env == null ? Map.of() : Map.copyOf(env);
        entrypoint = entrypoint == null ? List.of() : List.copyOf(entrypoint);
        cmd = cmd == null ? List.of() : List.copyOf(cmd);
    }

    /**
     * Where a backend keeps what it makes of this image for itself (a VM's disk of the root): beside
     * {@link #rootfs()}, made by the backend when first needed, and removed with the image. Since 2.13.
     */
    public Path derivedDir() {
        return rootfs.resolveSibling("derived");
    }

    /** The uid its processes run as: {@link #uid()}, or {@code insteadOfRoot} where that is root's (no sandbox process is). */
    public int uidOr(int insteadOfRoot) {
        return uid != 0 ? uid : insteadOfRoot;
    }

    /** The gid its processes run as: {@link #gid()}, or {@code insteadOfRoot} where that is root's. */
    public int gidOr(int insteadOfRoot) {
        return gid != 0 ? gid : insteadOfRoot;
    }
}
