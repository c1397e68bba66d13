package io.vivarium.images.oci.internal;

import java.util.regex.Pattern;

import io.vivarium.api.ApiException;

/**
 * An OCI image as skopeo's transports name it, checked before any tool sees it: {@code docker://}
 * a registry's image, {@code oci:} an image layout directory, {@code docker-archive:} a
 * {@code docker save} tarball. Passed to skopeo as one argument, never through a shell.
 *
 * @param transport {@value #DOCKER}, {@value #OCI} or {@value #ARCHIVE}
 * @param text the whole reference, as skopeo takes it
 */
record ImageReference(String transport, String text) {
    static final String DOCKER = "docker";
    static final String OCI = "oci";
    static final String ARCHIVE = "docker-archive";

    private static final String FORMS = "docker://host[:port]/name[:tag|@sha256:...], oci:/path/to/layout[:tag] or "
            + "docker-archive:/path/image.tar";
    private static final int MAX_LENGTH = 1024;
    /** A registry reference: host, optional port, path components, then a tag or a digest. */
    private static final Pattern REGISTRY = Pattern.compile(
            "[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)+(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?");
    /** An absolute path (no . or .. segment, no control character) with an optional {@code :tag}. */
    private static final Pattern LOCAL = Pattern.compile("(/[^/:\\p{Cntrl}]+)+(:[A-Za-z0-9_][A-Za-z0-9_./@:-]{0,127})?");

    static ImageReference parse(String text) {
        if (text == null || text.isBlank()) {
            throw ApiException.badRequest("image is required: an OCI image, " + FORMS);
        }
        if (text.length() > MAX_LENGTH) {
            throw ApiException.badRequest("image is longer than " + MAX_LENGTH + " characters");
        }
        if (text.startsWith("docker://")) {
            check(text.substring("docker://".length()), REGISTRY, text);
            return new ImageReference(DOCKER, text);
        }
        if (text.startsWith("oci:")) {
            checkLocal(text.substring("oci:".length()), text);
            return new ImageReference(OCI, text);
        }
        if (text.startsWith("docker-archive:")) {
            checkLocal(text.substring("docker-archive:".length()), text);
            return new ImageReference(ARCHIVE, text);
        }
        throw ApiException.badRequest("image '" + text + "' names no transport this daemon pulls from: write it as " + FORMS);
    }

    /** Whether the image is in a registry, which may be unreachable (502), not in a file here (400). */
    boolean remote() {
        return transport.equals(DOCKER);
    }

    /**
     * This image pinned to {@code digest}: a registry's by {@code name@digest}, so that a tag moved
     * between the inspect and the copy cannot put another image under the digest; a local one as it is.
     */
    ImageReference pinned(String digest) {
        if (!remote()) {
            return this;
        }
        String rest = text.substring("docker://".length());
        int at = rest.indexOf('@');
        if (at >= 0) {
            rest = rest.substring(0, at);
        }
        int tag = rest.indexOf(':', rest.lastIndexOf('/'));
        if (tag >= 0) {
            rest = rest.substring(0, tag);
        }
        return new ImageReference(DOCKER, "docker://" + rest + "@" + digest);
    }

    /** The registry's {@code host[:port]}, for a {@value #DOCKER} reference; null otherwise. */
    String registry() {
        if (!remote()) {
            return null;
        }
        String rest = text.substring("docker://".length());
        return rest.substring(0, rest.indexOf('/'));
    }

    private static void checkLocal(String pathAndTag, String text) {
        check(pathAndTag, LOCAL, text);
        for (String segment : pathAndTag.split("[/:]")) {
            if (segment.equals(".") || segment.equals("..")) {
                throw ApiException.badRequest("image '" + text + "' has a . or .. segment in its path: give the absolute path itself");
            }
        }
    }

    private static void check(String rest, Pattern form, String text) {
        if (!form.matcher(rest).matches()) {
            throw ApiException.badRequest("image '" + text + "' is malformed: write it as " + FORMS
                    + " (a path absolute, a name lower-case)");
        }
    }
}
