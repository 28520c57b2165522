// The suite's stand-in for kube-proxy and cluster DNS on its one-node Kubernetes, for pods on the
// pod network (CloudNativePG's instances and their replicas):
//   - the `kubernetes` Service: a TCP forwarder from its ClusterIP (an address on the host's lo)
//     to the API server on 127.0.0.1;
//   - cluster DNS on another lo address: `<service>.<namespace>.svc.<domain>` answers with the
//     Service's ready endpoint addresses, as a headless Service's name does.
//
// Why endpoints and not ClusterIPs: the pods are on one bridge of this machine, so an endpoint is
// always reachable directly, and no address translation rule has to be kept on the host; every
// ClusterIP but the API server's stays unrouted (the suite blackholes the Service range), so a
// mistake fails here instead of leaving the machine. Names outside the cluster domain are
// refused: nothing is forwarded to another resolver.
//
//	services -api https://127.0.0.1:PORT -token-file FILE -kubernetes 10.96.0.1:443 -dns 10.96.0.10:53
package main

import (
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

var (
	apiURL     = flag.String("api", "", "the API server's URL")
	tokenFile  = flag.String("token-file", "", "a file holding a bearer token for the API server")
	kubernetes = flag.String("kubernetes", "", "the kubernetes Service's ClusterIP:port to forward")
	dnsAddr    = flag.String("dns", "", "where to answer cluster DNS (ip:53)")
	domain     = flag.String("domain", "cluster.local", "the cluster's DNS domain")
)

func main() {
	flag.Parse()
	token, err := os.ReadFile(*tokenFile)
	if err != nil {
		log.Fatal(err)
	}
	api := &apiClient{
		base:  strings.TrimSuffix(*apiURL, "/"),
		token: strings.TrimSpace(string(token)),
		http: &http.Client{
			Timeout: 5 * time.Second,
			// The suite's own API server on loopback, with its self-signed certificate.
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		},
	}
	listener, err := net.Listen("tcp", *kubernetes)
	if err != nil {
		log.Fatal(err)
	}
	conn, err := net.ListenPacket("udp", *dnsAddr)
	if err != nil {
		log.Fatal(err)
	}
	apiHost, err := url.Parse(*apiURL)
	if err != nil {
		log.Fatal(err)
	}
	go forward(listener, apiHost.Host)
	serveDNS(conn, api)
}

// forward relays each connection to the API server as it is (TLS end to end).
func forward(listener net.Listener, to string) {
	for {
		client, err := listener.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer client.Close()
			server, err := net.Dial("tcp", to)
			if err != nil {
				log.Print(err)
				return
			}
			defer server.Close()
			go func() { io.Copy(server, client); server.(*net.TCPConn).CloseWrite() }()
			io.Copy(client, server)
		}()
	}
}

type apiClient struct {
	base, token string
	http        *http.Client
}

func (a *apiClient) get(path string, into any) (found bool, err error) {
	request, err := http.NewRequest("GET", a.base+path, nil)
	if err != nil {
		return false, err
	}
	request.Header.Set("Authorization", "Bearer "+a.token)
	response, err := a.http.Do(request)
	if err != nil {
		return false, err
	}
	defer response.Body.Close()
	if response.StatusCode == http.StatusNotFound {
		return false, nil
	}
	if response.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s", path, response.Status)
	}
	return true, json.NewDecoder(response.Body).Decode(into)
}

type endpointSlices struct {
	Items []struct {
		AddressType string `json:"addressType"`
		Endpoints   []struct {
			Addresses  []string `json:"addresses"`
			Conditions struct {
				Ready *bool `json:"ready"`
			} `json:"conditions"`
		} `json:"endpoints"`
	} `json:"items"`
}

// addresses of `service` in `namespace`: its ready endpoints' IPv4 addresses; found is false
// when there is no such Service.
func (a *apiClient) addresses(namespace, service string) (ips []net.IP, found bool, err error) {
	if namespace == "default" && service == "kubernetes" {
		host, _, _ := net.SplitHostPort(*kubernetes)
		return []net.IP{net.ParseIP(host)}, true, nil
	}
	var svc struct{}
	found, err = a.get(fmt.Sprintf("/api/v1/namespaces/%s/services/%s", namespace, service), &svc)
	if err != nil || !found {
		return nil, found, err
	}
	var slices endpointSlices
	selector := url.QueryEscape("kubernetes.io/service-name=" + service)
	_, err = a.get(fmt.Sprintf("/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices?labelSelector=%s",
		namespace, selector), &slices)
	for _, slice := range slices.Items {
		if slice.AddressType != "IPv4" {
			continue
		}
		for _, endpoint := range slice.Endpoints {
			if endpoint.Conditions.Ready != nil && !*endpoint.Conditions.Ready {
				continue
			}
			for _, address := range endpoint.Addresses {
				if ip := net.ParseIP(address).To4(); ip != nil {
					ips = append(ips, ip)
				}
			}
		}
	}
	return ips, true, err
}

const (
	typeA      = 1
	rcodeOK    = 0
	rcodeFail  = 2
	rcodeNX    = 3
	rcodeRefus = 5
)

func serveDNS(conn net.PacketConn, api *apiClient) {
	buffer := make([]byte, 512)
	for {
		n, from, err := conn.ReadFrom(buffer)
		if err != nil {
			log.Fatal(err)
		}
		query := append([]byte(nil), buffer[:n]...)
		go func() {
			if reply := answer(query, api); reply != nil {
				conn.WriteTo(reply, from)
			}
		}()
	}
}

// answer builds the reply to one query, or nil for what is not a query.
func answer(query []byte, api *apiClient) []byte {
	if len(query) < 12 || query[2]&0x80 != 0 || binary.BigEndian.Uint16(query[4:6]) != 1 {
		return nil
	}
	name, end := readName(query, 12)
	if end < 0 || end+4 > len(query) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(query[end : end+2])
	question := query[12 : end+4]
	rcode, ips := resolve(strings.ToLower(name), qtype, api)
	reply := make([]byte, 12, 12+len(question)+16*len(ips))
	copy(reply[0:2], query[0:2])
	reply[2] = 0x84 | query[2]&0x01 // a response, authoritative, recursion desired as asked
	reply[3] = byte(rcode)
	binary.BigEndian.PutUint16(reply[4:6], 1)
	binary.BigEndian.PutUint16(reply[6:8], uint16(len(ips)))
	reply = append(reply, question...)
	for _, ip := range ips {
		reply = append(reply, 0xc0, 12) // the question's name
		reply = binary.BigEndian.AppendUint16(reply, typeA)
		reply = binary.BigEndian.AppendUint16(reply, 1)
		reply = binary.BigEndian.AppendUint32(reply, 1) // a second: endpoints move on failover
		reply = binary.BigEndian.AppendUint16(reply, 4)
		reply = append(reply, ip...)
	}
	return reply
}

// resolve answers `name`: a Service's endpoints for A, no records for other types of a name that
// exists, NXDOMAIN for a Service that does not, REFUSED outside the cluster's domain.
func resolve(name string, qtype uint16, api *apiClient) (int, []net.IP) {
	suffix := ".svc." + *domain
	if !strings.HasSuffix(name, suffix) {
		return rcodeRefus, nil
	}
	parts := strings.Split(strings.TrimSuffix(name, suffix), ".")
	if len(parts) != 2 {
		return rcodeNX, nil
	}
	ips, found, err := api.addresses(parts[1], parts[0])
	if err != nil {
		log.Print(err)
		return rcodeFail, nil
	}
	if !found {
		return rcodeNX, nil
	}
	if qtype != typeA {
		return rcodeOK, nil
	}
	return rcodeOK, ips
}

// readName reads the uncompressed name at offset (queries do not compress), returning it
// without the final dot and the offset after it, or -1.
func readName(message []byte, offset int) (string, int) {
	var labels []string
	for offset < len(message) {
		length := int(message[offset])
		offset++
		if length == 0 {
			return strings.Join(labels, "."), offset
		}
		if length > 63 || offset+length > len(message) {
			return "", -1
		}
		labels = append(labels, string(message[offset:offset+length]))
		offset += length
	}
	return "", -1
}
