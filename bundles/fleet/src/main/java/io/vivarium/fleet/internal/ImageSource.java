package io.vivarium.fleet.internal;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import javax.net.ssl.HttpsURLConnection;

import io.vivarium.api.spi.SnapshotManifest;

/**
 * The node that holds a tag, as a node fetching its image reaches it: over HTTPS to its address,
 * its certificate pinned, the ticket the master got from it as the bearer token; each file comes as
 * {@link SparseFrames} and is read back as its bytes.
 */
final class ImageSource {
    /** How long a read may wait for the holder's next bytes. */
    static final Duration READ_TIMEOUT = Duration.ofSeconds(60);

    private final NodeAddress address;
    private final String certificateSha256;
    private final String ticket;

    ImageSource(NodeAddress address, String certificateSha256, String ticket) {
        this.address = address;
        this.certificateSha256 = certificateSha256;
        this.ticket = ticket;
    }

    /** The bytes of one file of the image; an {@link IOException} naming the holder and its answer if it gives none. */
    InputStream open(SnapshotManifest.Entry file) throws IOException {
        String where = "the node at " + address;
        HttpsURLConnection c;
        int status;
        try {
            c = PinnedTrust.open("https://" + address + "/v1/node/images/file?path="
                    + URLEncoder.encode(file.path(), StandardCharsets.UTF_8), certificateSha256);
            c.setConnectTimeout((int) NodeLink.CONNECT_TIMEOUT.toMillis());
            c.setReadTimeout((int) READ_TIMEOUT.toMillis());
            c.setRequestProperty("Authorization", "Bearer " + ticket);
            status = c.getResponseCode();
        } catch (IOException e) {
            throw new IOException(where + " that holds the image cannot be reached: " + e.getMessage(), e);
        }
        if (status != 200) {
            byte[] body;
            try (InputStream err = c.getErrorStream()) {
                body = err == null ? new byte[0] : err.readAllBytes();
            }
            throw new IOException(where + " that holds the image answered " + status + " for " + file.path() + ": "
                    + FleetJson.error(body));
        }
        return new FilterInputStream(SparseFrames.decode(c.getInputStream(), file.size())) {
            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                try {
                    return super.read(b, off, len);
                } catch (IOException e) {
                    throw new IOException(where + " stopped sending " + file.path() + ": " + e.getMessage(), e);
                }
            }
        };
    }
}
