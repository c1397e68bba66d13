package io.vivarium.images.oci.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/** Configuration of {@link OciRootImages}. */
@ObjectClassDefinition(name = "Vivarium OCI images",
        description = "Pulls OCI images with skopeo and unpacks them with umoci into root file systems for templates.")
public @interface OciImagesConfig {
    String PID = "io.vivarium.images.oci";

    @AttributeDefinition(description = "Path of the skopeo executable (Debian package skopeo).")
    String skopeo__path() default "/usr/bin/skopeo";

    @AttributeDefinition(description = "Path of the umoci executable (Debian package umoci).")
    String umoci__path() default "/usr/bin/umoci";

    @AttributeDefinition(description = "Where unpacked images are kept, one directory per digest; empty means "
            + "images/oci under the daemon's state directory.")
    String cache__dir() default "";

    @AttributeDefinition(description = "A containers-auth.json (skopeo's --authfile) with the registries' credentials; "
            + "empty means none: registries are asked anonymously. Its content is never read by the daemon nor shown.")
    String auth__file() default "";

    @AttributeDefinition(description = "Registries (host:port, comma-separated) pulled from over plain HTTP or "
            + "TLS that is not verified, such as a registry on 127.0.0.1; empty means the framework property "
            + "vivarium.images.insecure.registries, else none.")
    String insecure__registries() default "";

    @AttributeDefinition(description = "The most an image's files may hold together, in MiB.")
    int max__image__mib() default 16384;

    @AttributeDefinition(description = "The largest file an image may hold, in MiB.")
    int max__file__mib() default 4096;

    @AttributeDefinition(description = "How long one pull (copy and unpack) may take, in minutes.")
    int pull__timeout__mins() default 30;
}
