package io.vivarium.fleet.internal;

import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Role;
import io.vivarium.api.http.BearerTokens;

/**
 * The bearer tokens the fleet issues, for the http edge: a registration token not yet used and
 * not expired, the credential of a node that dials in and is not revoked, and a live ticket to
 * fetch an image this node holds ({@link ImageTickets}). All are callers of
 * the {@link Role#NODE} role, which only the node routes take; the tenant names which token it is.
 */
final class FleetTokens implements BearerTokens {
    static final String REGISTRATION = "fleet-registration:";
    static final String NODE = "fleet-node:";
    static final String FETCH = "fleet-fetch:";

    private final Registrations registrations;
    private final Nodes nodes;
    private final ImageTickets tickets;

    FleetTokens(Registrations registrations, Nodes nodes, ImageTickets tickets) {
        this.registrations = registrations;
        this.nodes = nodes;
        this.tickets = tickets;
    }

    @Override
    public Optional<Caller> caller(String token) {
        Optional<Caller> fetching = tickets.handle(token).map(handle -> new Caller(FETCH + handle, Role.NODE));
        if (fetching.isPresent()) {
            return fetching;
        }
        try {
            Optional<Caller> polling = nodes.polling(token).map(id -> new Caller(NODE + id, Role.NODE));
            return polling.isPresent() ? polling : registrations.valid(token).map(key -> new Caller(REGISTRATION + key, Role.NODE));
        } catch (ApiException e) {
            throw e;
        } catch (RuntimeException e) {
            throw ApiException.unavailable("the master cannot read its fleet records to check this token now ("
                    + e.getMessage() + "); retry shortly", 2);
        }
    }

    /** The registration key or node id a caller of {@link Role#NODE} stands for; 403 for the other kind. */
    static String of(Caller caller, String kind, String route) {
        if (caller.role() != Role.NODE || !caller.tenant().startsWith(kind)) {
            throw ApiException.forbidden(route + " needs " + switch (kind) {
                case NODE -> "the credential a node got when it registered";
                case FETCH -> "a fetch ticket the node that holds the image issued";
                default -> "a registration token (POST /v1/node/tokens)";
            });
        }
        return caller.tenant().substring(kind.length());
    }
}
