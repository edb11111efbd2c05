#include <stdio.h>

int mod111(int x)
{
    return x + 111;
}
