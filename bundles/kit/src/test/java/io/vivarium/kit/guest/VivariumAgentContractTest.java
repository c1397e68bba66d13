package io.vivarium.kit.guest;

/** The contract against our own agent, the real binary, over its Unix socket. */
class VivariumAgentContractTest extends LocalPeerContract {
    @Override
    PeerProcess startPeer() throws Exception {
        return VivariumAgent.start();
    }

    @Override
    boolean overOneStream() {
        return false;
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
