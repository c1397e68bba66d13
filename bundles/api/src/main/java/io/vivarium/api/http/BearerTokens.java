package io.vivarium.api.http;

import java.util.Optional;

import org.osgi.annotation.versioning.ConsumerType;

import io.vivarium.api.Caller;

/**
 * Bearer tokens a bundle issues itself, beside the token file: the fleet's registration tokens and
 * its polling nodes' credentials. Register one as an OSGi service; the http edge asks each, after
 * the token file, for a token the file does not list. Since 1.3.
 */
@ConsumerType
public interface BearerTokens {

    /**
     * The caller {@code token} belongs to, if this service issued it and it is valid now.
     *
     * @throws io.vivarium.api.ApiException 503 with {@code Retry-After} if it cannot tell now (its
     *         records cannot be read): the edge answers that, not a 401 that would tell a valid
     *         holder its token is gone
     */
    Optional<Caller> caller(String token);
}
