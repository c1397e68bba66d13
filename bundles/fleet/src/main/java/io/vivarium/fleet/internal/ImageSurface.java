package io.vivarium.fleet.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.BinaryBody;
import io.vivarium.api.http.Route;
import io.vivarium.api.Role;
import io.vivarium.api.spi.SnapshotCopies;
import io.vivarium.api.spi.SnapshotManifest;

/**
 * The images a node holds, every tenant's ({@code GET /node/images}, operator: the master
 * reconciles its tag records with it), and how a tag's image moves between nodes, in three routes
 * the master drives: the holder issues a
 * ticket and lists the image ({@code POST /node/images/tickets}, operator: the master, for the
 * caller's tenant); the node that lacks it is told to fetch it ({@code POST /node/images/fetch},
 * operator), and dials the holder for each file with the ticket ({@code GET /node/images/file},
 * the {@code node} role the ticket carries), the holder's certificate pinned.
 */
final class ImageSurface implements ApiSurface {
    /** The largest fetch order: a manifest of an image of many small files. */
    static final long MAX_FETCH_BYTES = 64L << 20;

    /** A ticket and what it opens. */
    record Issued(String ticket, SnapshotManifest manifest) {
    }

    record TicketRequest(String tag) {
    }

    /** Fetch {@code manifest} from the holder at {@code address}, whose certificate {@code certificateSha256} names. */
    record FetchRequest(String address, String certificateSha256, String ticket, SnapshotManifest manifest) {
    }

    private final List<Route> routes;

    ImageSurface(SnapshotCopies copies, ImageTickets tickets) {
        this.routes = List.of(
                new Route("GET", "/node/images", Role.OPERATOR, 200, r -> copies.held()),
                new Route("POST", "/node/images/tickets", Role.OPERATOR, 201, r -> {
                    String tag = r.body(TicketRequest.class).tag();
                    SnapshotManifest manifest = copies.manifest(r.caller().tenant(), tag);
                    return new Issued(tickets.issue(r.caller().tenant(), tag), manifest);
                }),
                new Route("GET", "/node/images/file", Role.NODE, 200, r -> {
                    String handle = FleetTokens.of(r.caller(), FleetTokens.FETCH, "GET /v1/node/images/file");
                    ImageTickets.Ticket t = tickets.ticket(handle)
                            .orElseThrow(() -> new ApiException(401, "the fetch ticket expired; the master issues another"));
                    String path = r.queryParam("path").orElseThrow(() -> ApiException.badRequest("path is required"));
                    try {
                        return stream(copies.open(t.tenant(), t.tag(), path));
                    } catch (IOException e) {
                        throw ApiException.internal("cannot read " + path + " of snapshot " + t.tag() + ": " + e.getMessage(), e);
                    }
                }),
                new Route("POST", "/node/images/fetch", Role.OPERATOR, 204, r -> {
                    FetchRequest fetch = r.body(FetchRequest.class);
                    if (fetch.manifest() == null || fetch.ticket() == null || fetch.ticket().isBlank()) {
                        throw ApiException.badRequest("address, certificate_sha256, ticket and manifest are required");
                    }
                    if (fetch.certificateSha256() == null || !fetch.certificateSha256().matches("[0-9a-f]{64}")) {
                        throw ApiException.badRequest("certificate_sha256 must be the holder's certificate SHA-256, 64 hex digits");
                    }
                    ImageSource holder = new ImageSource(NodeAddress.parse(fetch.address()), fetch.certificateSha256(), fetch.ticket());
                    copies.receive(r.caller().tenant(), fetch.manifest(), holder::open);
                    return null;
                }, MAX_FETCH_BYTES));
    }

    /** The file's bytes as {@link SparseFrames}: its holes are not sent. */
    private static BinaryBody stream(InputStream in) {
        return new BinaryBody() {
            @Override
            public String contentType() {
                return SparseFrames.CONTENT_TYPE;
            }

            @Override
            public long length() {
                return -1;
            }

            @Override
            public void writeTo(OutputStream out) throws IOException {
                try (in) {
                    SparseFrames.encode(in, out);
                }
            }
        };
    }

    @Override
    public String prefix() {
        return "/v1";
    }

    @Override
    public List<Route> routes() {
        return routes;
    }
}
