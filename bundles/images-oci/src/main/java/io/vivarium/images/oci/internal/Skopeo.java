package io.vivarium.images.oci.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import io.vivarium.common.exec.HostCommand;

/**
 * The skopeo commands a pull needs: the manifest as the source serves it, and a copy into an OCI
 * layout (skopeo verifies every blob's digest as it copies). A registry's credentials come from
 * the operator's auth file, given to skopeo by its path, never read or echoed here.
 */
final class Skopeo {
    private static final Duration INSPECT_TIMEOUT = Duration.ofMinutes(2);

    private final Path skopeo;
    private final Path authFile;
    private final Set<String> insecureRegistries;

    /**
     * @param authFile a containers-auth.json for the registries, or null for none
     * @param insecureRegistries registries ({@code host:port}) reached over plain HTTP or TLS not verified
     */
    Skopeo(Path skopeo, Path authFile, Set<String> insecureRegistries) {
        this.skopeo = skopeo;
        this.authFile = authFile;
        this.insecureRegistries = Set.copyOf(insecureRegistries);
    }

    Path path() {
        return skopeo;
    }

    /** The manifest (or index) exactly as the source serves it: its SHA-256 is the image's digest. */
    byte[] rawManifest(ImageReference ref) throws IOException {
        List<String> argv = new ArrayList<>(List.of(skopeo.toString(), "inspect", "--raw"));
        argv.addAll(sourceOptions(ref, ""));
        argv.add(ref.text());
        return HostCommand.stdout(argv, INSPECT_TIMEOUT);
    }

    /** Copies the image into the layout {@code layout} (made by skopeo), as its only image, tagged {@code image}. */
    void copy(ImageReference ref, Path layout, Duration timeout) throws IOException {
        List<String> argv = new ArrayList<>(List.of(skopeo.toString(), "copy", "--quiet"));
        argv.addAll(sourceOptions(ref, "src-"));
        argv.add(ref.text());
        argv.add("oci:" + layout + ":image");
        HostCommand.run(argv, timeout);
    }

    private List<String> sourceOptions(ImageReference ref, String prefix) {
        List<String> options = new ArrayList<>();
        if (ref.remote()) {
            if (authFile != null) {
                options.addAll(List.of("--" + prefix + "authfile", authFile.toString()));
            } else {
                options.add("--" + prefix + "no-creds");
            }
            if (insecureRegistries.contains(ref.registry())) {
                options.add("--" + prefix + "tls-verify=false");
            }
        }
        return options;
    }
}
