package io.vivarium.images.oci.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** References as skopeo takes them, and a registry's pinned to the digest its inspect gave. */
class ImageReferenceTest {
    private static final String DIGEST = "sha256:" + "ab".repeat(32);

    @Test
    void aRegistryImageIsPinnedToItsDigestWhateverItsTagALocalOneStaysAsItIs() {
        assertEquals("docker://127.0.0.1:5000/team/app@" + DIGEST,
                ImageReference.parse("docker://127.0.0.1:5000/team/app:1.2").pinned(DIGEST).text());
        assertEquals("docker://host/app@" + DIGEST, ImageReference.parse("docker://host/app").pinned(DIGEST).text());
        assertEquals("docker://host/app@" + DIGEST,
                ImageReference.parse("docker://host/app:v1@sha256:" + "cd".repeat(32)).pinned(DIGEST).text());
        assertEquals("127.0.0.1:5000", ImageReference.parse("docker://127.0.0.1:5000/team/app:1.2").registry());
        assertEquals("oci:/srv/layout:app", ImageReference.parse("oci:/srv/layout:app").pinned(DIGEST).text());
        assertNull(ImageReference.parse("docker-archive:/srv/image.tar").registry());
    }
}
