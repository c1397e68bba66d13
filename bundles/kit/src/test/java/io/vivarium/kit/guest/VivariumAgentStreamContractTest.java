package io.vivarium.kit.guest;

/** The contract against our own agent over one held connection, requests multiplexed by id. */
class VivariumAgentStreamContractTest extends LocalPeerContract {
    @Override
    PeerProcess startPeer() throws Exception {
        return VivariumAgent.start();
    }

    @Override
    boolean overOneStream() {
        return true;
    }

    @Override
    boolean extended() {
        return true;
    }

    @Override
    boolean evaluates() {
        return true;
    }

    @Override
    boolean lists() {
        return true;
    }
}
