package io.vivarium.core.internal;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.vivarium.api.spi.RootImage;

/**
 * The root a sandbox of a template runs on, as its record keeps it: the template's image (its
 * unpacked root, by digest) with the template's {@code env}, {@code workdir} and {@code user} over the
 * image's own. Exec defaults come from it ({@link ExecRequests}); the backend gets its {@link RootImage}.
 *
 * @param rootfs the unpacked root's directory
 * @param env the variables every command gets, the template's over the image's
 * @param workdir where commands run unless they say
 */
record TemplateRoot(String digest, String rootfs, Map<String, String> env, String workdir, int uid, int gid) {

    TemplateRoot {
        env = env == null ? Map.of() : Map.copyOf(env);
    }

    RootImage image() {
        return new RootImage(digest, Path.of(rootfs), env, workdir, null, uid, gid, List.of(), List.of());
    }
}
