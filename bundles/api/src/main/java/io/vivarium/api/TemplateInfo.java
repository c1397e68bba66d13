package io.vivarium.api;

import java.util.List;
import java.util.Map;

/**
 * What {@code GET /v1/templates/{name}} returns ({@link TemplateService}). Since 2.10.
 *
 * @param name the template's name
 * @param state {@value #BUILDING} while its image is pulled and unpacked, {@value #READY} once
 *        sandboxes can be made from it, {@value #FAILED} when the build failed ({@code build.error} says why)
 * @param request what the operator asked for, credentials left out
 * @param build the build of its image: the last one, or the one under way
 * @param image what the image gives its sandboxes, once built; null before
 * @param createdAtUnix when the template was made, seconds since the epoch
 */
public record TemplateInfo(String name, String state, TemplateRequest request, Build build, ImageFacts image,
        long createdAtUnix) {

    public static final String BUILDING = "building";
    public static final String READY = "ready";
    public static final String FAILED = "failed";

    /**
     * A build of the template's image: pulled (digests verified), checked and unpacked once per
     * image digest, shared by every template of that image.
     *
     * @param id the build's id
     * @param state {@value TemplateInfo#BUILDING}, {@value TemplateInfo#READY} or {@value TemplateInfo#FAILED}
     * @param layersDone layers pulled and checked so far
     * @param layers the image's layers, 0 until its manifest is read
     * @param bytesDone bytes of its layers pulled so far
     * @param bytes the size of its layers (compressed), 0 until its manifest is read
     * @param error why it failed, or null
     */
    public record Build(String id, String state, int layersDone, int layers, long bytesDone, long bytes, String error) {
    }

    /**
     * What the image's configuration gives a sandbox, its {@code User} resolved in the image's own
     * {@code /etc/passwd} and {@code /etc/group}.
     *
     * @param digest the image's manifest digest ({@code sha256:...})
     * @param env its {@code Env}
     * @param workdir its {@code WorkingDir}, {@code /} when it has none
     * @param user its {@code User} as written, or null
     * @param uid the uid commands run as
     * @param gid the gid commands run as
     * @param entrypoint its {@code Entrypoint} (available, not run)
     * @param cmd its {@code Cmd} (available, not run)
     */
    public record ImageFacts(String digest, Map<String, String> env, String workdir, String user, int uid, int gid,
            List<String> entrypoint, List<String> cmd) {
    }
}
