package plugins

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"time"
)

// The mutual TLS between host and plugin. It is go-plugin's AutoMTLS
// protocol (the host's certificate in PLUGIN_CLIENT_CERT, the plugin's
// own in the sixth field of its handshake line, each side trusting only
// the other's) with two changes, because AutoMTLS makes a P-521 key on
// each side at every start, about 9 ms each here, a third of a plugin's
// start:
//
//   - the keys are P-256 (0.3 ms), as the Python example's already were;
//   - the host makes the plugin's certificate and key too, and hands
//     them to the plugin in EnvPluginTLS; a plugin built on Serve takes
//     them (and removes the variable, so nothing it starts inherits the
//     key) instead of making its own, because go-plugin's server sends
//     its certificate in the handshake only when it made it itself.
//
// A plugin that ignores EnvPluginTLS (any other language, or a Go plugin
// not built on Serve) does AutoMTLS as before: it makes its own
// certificate and sends it in the handshake, and go-plugin's client then
// trusts that one instead. Either way the host trusts one certificate,
// made for this start, and the plugin one, the host's.
//
// The key in the environment is readable, through /proc, only by the
// plugin's user (the daemon's, which holds the key anyway) and root.

// EnvPluginTLS carries, to a plugin built on Serve, the certificate and
// private key the host made for it, both PEM.
const EnvPluginTLS = "HARNESSD_PLUGIN_TLS"

// certValidity is how long a start's certificates are valid: longer than
// any run, since the broker's connections are made as the run goes.
const certValidity = 365 * 24 * time.Hour

// startTLS makes one start's certificates: the host's TLS config, and the
// environment that hands the plugin the host's certificate and its own
// key pair.
func startTLS() (*tls.Config, []string, error) {
	host, hostPEM, err := newCert()
	if err != nil {
		return nil, nil, err
	}
	plug, plugPEM, err := newCert()
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(plug.PrivateKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	pool := x509.NewCertPool()
	pool.AddCert(plug.Leaf)
	cfg := &tls.Config{
		Certificates: []tls.Certificate{host},
		// RootCAs for the plugin's server; ClientCAs for the host
		// services' server the plugin dials through the broker.
		// go-plugin's client replaces both when the plugin's handshake
		// names a certificate of its own.
		RootCAs:    pool,
		ClientCAs:  pool,
		ClientAuth: tls.RequireAndVerifyClientCert,
		ServerName: "localhost",
		MinVersion: tls.VersionTLS12,
	}
	env := []string{
		"PLUGIN_CLIENT_CERT=" + string(hostPEM),
		EnvPluginTLS + "=" + string(plugPEM) + string(keyPEM),
	}
	return cfg, env, nil
}

// newCert makes a self-signed P-256 certificate for "localhost", usable
// by a client and a server, as go-plugin's generateCert does (but for the
// curve).
func newCert() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("plugins: tls key: %w", err)
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("plugins: tls serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"harnessd"}},
		DNSNames:              []string{"localhost"},
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed: it is its own root
		SerialNumber:          sn,
		NotBefore:             now.Add(-30 * time.Second),
		NotAfter:              now.Add(certValidity),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("plugins: tls certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("plugins: tls certificate: %w", err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// serverTLS is the plugin side's go-plugin TLSProvider: the certificate
// and key the host made for this plugin, trusting only the host's. With
// no EnvPluginTLS (an older host) it returns nil, and go-plugin does
// AutoMTLS.
func serverTLS() (*tls.Config, error) {
	pair := os.Getenv(EnvPluginTLS)
	if pair == "" {
		return nil, nil
	}
	os.Unsetenv(EnvPluginTLS) // nothing the plugin starts inherits the key
	cert, err := tls.X509KeyPair([]byte(pair), []byte(pair))
	if err != nil {
		return nil, fmt.Errorf("plugins: %s: %w", EnvPluginTLS, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(os.Getenv("PLUGIN_CLIENT_CERT"))) {
		return nil, errors.New("plugins: " + EnvPluginTLS + " is set but PLUGIN_CLIENT_CERT holds no certificate")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		RootCAs:      pool, // the host services' server, dialled through the broker
		ServerName:   "localhost",
		MinVersion:   tls.VersionTLS12,
	}, nil
}
