package io.vivarium.apiv1.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.BranchRequest;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * The body of {@code POST /v1/sandboxes/{id}/branch}: {@link BranchRequest}'s fields and the
 * reference API's removed {@code wait}, which cannot be a component of that name ({@code wait()}
 * would hide {@link Object#wait()}); sent with any value it is a 410 like the other removed fields.
 */
public record BranchBody(String tag, String mode, Boolean live, @JsonProperty("wait") Boolean waitForCopy, Boolean diff,
        Boolean measureDiff) {

    BranchRequest branchRequest() {
        if (waitForCopy != null) {
            throw new ApiException(410, "wait was removed: a branch always returns once its image is written; send "
                    + "only {\"tag\": ...}");
        }
        return new BranchRequest(tag, mode, live, diff, measureDiff);
    }
}
