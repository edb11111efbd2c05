#include <stdio.h>

int mod080(int x)
{
    int unused_80 = 80;
    return x + 80;
}
