package io.vivarium.images.oci.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * An OCI image layout directory skopeo wrote ({@code index.json}, {@code blobs/sha256/...}): the
 * manifest of its one image, its layers and its configuration, every blob read by its digest
 * (which is checked to be a digest, so that no name read from the layout leads out of it).
 */
final class OciLayout {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long MAX_JSON_BYTES = 4 << 20;

    /** A layer as the manifest lists it. */
    record Layer(String digest, String mediaType, long size) {
    }

    /**
     * What the image's configuration says a process of it gets.
     *
     * @param env its {@code Env}, by name
     */
    record Config(Map<String, String> env, String workdir, String user, List<String> entrypoint, List<String> cmd) {
    }

    private final Path dir;

    OciLayout(Path dir) {
        this.dir = dir;
    }

    Path blob(String digest) throws IOException {
        if (!Sha256.isDigest(digest)) {
            throw new IOException("'" + digest + "' is not a sha256 digest");
        }
        return dir.resolve("blobs").resolve("sha256").resolve(Sha256.hex(digest));
    }

    /** The manifest of the layout's only image. */
    JsonNode manifest() throws IOException {
        JsonNode manifests = JSON.readTree(dir.resolve("index.json").toFile()).path("manifests");
        if (manifests.size() != 1) {
            throw new IOException("the layout holds " + manifests.size() + " images, not one");
        }
        return JSON.readTree(small(blob(manifests.get(0).path("digest").asText())));
    }

    List<Layer> layers() throws IOException {
        List<Layer> layers = new ArrayList<>();
        for (JsonNode l : manifest().path("layers")) {
            layers.add(new Layer(l.path("digest").asText(), l.path("mediaType").asText(), l.path("size").asLong()));
        }
        return layers;
    }

    Config config() throws IOException {
        JsonNode c = JSON.readTree(small(blob(manifest().path("config").path("digest").asText()))).path("config");
        Map<String, String> env = new LinkedHashMap<>();
        for (JsonNode e : c.path("Env")) {
            String pair = e.asText();
            int eq = pair.indexOf('=');
            // a name or value with a NUL could never reach a command's environment: left out
            if (eq > 0 && pair.indexOf('\0') < 0) {
                env.put(pair.substring(0, eq), pair.substring(eq + 1));
            }
        }
        String workdir = c.path("WorkingDir").asText("");
        String user = c.path("User").asText("");
        return new Config(env, workdir.isEmpty() ? "/" : workdir, user.isEmpty() ? null : user, strings(c.path("Entrypoint")),
                strings(c.path("Cmd")));
    }

    /**
     * The sum of the layers' sizes and their count in a manifest as a registry serves it
     * ({@code skopeo inspect --raw}); an index of several platforms gives none (0, 0).
     */
    static long[] sizeOf(byte[] rawManifest) throws IOException {
        JsonNode m = JSON.readTree(rawManifest);
        long bytes = 0;
        for (JsonNode l : m.path("layers")) {
            bytes += l.path("size").asLong();
        }
        return new long[] {bytes, m.path("layers").size()};
    }

    /** A manifest or configuration blob, which an image of a sane size keeps well under {@value #MAX_JSON_BYTES} bytes. */
    private static byte[] small(Path blob) throws IOException {
        if (Files.size(blob) > MAX_JSON_BYTES) {
            throw new IOException(blob.getFileName() + " is " + Files.size(blob) + " bytes, over the " + MAX_JSON_BYTES
                    + " a manifest or an image configuration may be");
        }
        return Files.readAllBytes(blob);
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }
}
