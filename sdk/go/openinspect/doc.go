// Stands up a complete Open-Inspect (background-agents) installation on Cloudflare, Modal, Daytona, E2B, Vercel Sandbox or OpenComputer, and Kubernetes.
package openinspect
